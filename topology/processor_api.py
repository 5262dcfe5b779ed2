"""The record and punctuation types of the Processor API (re-exported by
:mod:`deltastreams.streams.processor`), here so that the processing core can use them too."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Record:
    """A record as a processor sees and forwards it. ``headers``: Kafka's record headers, an
    ordered tuple of ``(key, bytes)`` pairs (a key may repeat). A forwarded record carries the
    headers it has: ``record.with_value(v)`` keeps the input's, ``Record(k, v, t)`` has none."""

    key: Any
    value: Any
    timestamp: int
    headers: tuple[tuple[str, bytes], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.headers, tuple):
            object.__setattr__(self, "headers", tuple((str(k), bytes(v)) for k, v in self.headers))

    def header(self, key: str) -> bytes | None:
        """The last value of header ``key`` (Kafka's ``lastHeader``), or None."""
        return next((v for k, v in reversed(self.headers) if k == key), None)

    def with_headers(self, headers) -> Record:
        return replace(self, headers=tuple((str(k), bytes(v)) for k, v in headers))

    def with_key(self, key: Any) -> Record:
        return replace(self, key=key)

    def with_value(self, value: Any) -> Record:
        return replace(self, value=value)

    def with_timestamp(self, timestamp: int) -> Record:
        return replace(self, timestamp=timestamp)


class PunctuationType(Enum):
    STREAM_TIME = "stream_time"
    """Fires as the task's stream time (the largest record timestamp it has seen) passes each
    interval, checked after every record."""
    WALL_CLOCK_TIME = "wall_clock_time"
    """Fires as the machine's clock passes each interval, checked at the end of every batch."""
