"""Options of KStream operations, in Kafka's shape: ``Branched`` (for ``split``) and ``Printed``
(for ``print``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from deltastreams.conf.errors import TopologyError


@dataclass(frozen=True)
class Branched:
    """How ``split().branch(...)`` treats a branch: its name (the key in the returned map, after
    the split's name), and optionally a function applied to the branch (``with_function``: its
    result goes into the map unless None) or a consumer (``with_consumer``: the branch goes into
    no map)."""

    name: str | None = None
    function: Callable[[Any], Any] | None = None
    consumer: Callable[[Any], None] | None = None

    @classmethod
    def with_name(cls, name: str) -> Branched:
        if not isinstance(name, str) or not name:
            raise TopologyError(f"Branched.with_name takes a non-empty name, got {name!r}", node="Branched")
        return cls(name=name)

    @classmethod
    def with_function(cls, function: Callable[[Any], Any], name: str | None = None) -> Branched:
        if not callable(function):
            raise TopologyError(f"Branched.with_function takes a function of the branch's KStream, got {function!r}", node="Branched")
        return cls(name=name, function=function)

    @classmethod
    def with_consumer(cls, consumer: Callable[[Any], None], name: str | None = None) -> Branched:
        if not callable(consumer):
            raise TopologyError(f"Branched.with_consumer takes a function of the branch's KStream, got {consumer!r}", node="Branched")
        return cls(name=name, consumer=consumer)


@dataclass(frozen=True)
class Printed:
    """Where and how ``print`` writes each record: ``[label]: key, value`` by default (the label
    defaults to the processor's name; Java's ``null`` for a missing key or value)."""

    path: str | None = None
    label: str | None = None
    mapper: Callable[[Any, Any], str] | None = None
    name: str | None = None

    @classmethod
    def to_sysout(cls) -> Printed:
        """Standard output of the process that runs the task (the driver in local mode, an
        executor's task host on a cluster)."""
        return cls()

    @classmethod
    def to_file(cls, path: str) -> Printed:
        """Append to ``path`` (on the machine that runs the task)."""
        if not isinstance(path, str) or not path:
            raise TopologyError(f"Printed.to_file takes a path, got {path!r}", node="Printed")
        return cls(path=path)

    def with_label(self, label: str) -> Printed:
        return replace(self, label=label)

    def with_key_value_mapper(self, mapper: Callable[[Any, Any], str]) -> Printed:
        """``mapper(key, value) -> str`` instead of ``"key, value"``."""
        return replace(self, mapper=mapper)

    def with_name(self, name: str) -> Printed:
        return replace(self, name=name)
