"""The store contracts.

A store maps ``bytes`` keys to ``bytes`` values, in key order. Implementations: RocksDB (on the
task's local disk, :class:`deltastreams.state.RocksDBKeyValueStore`) and in-memory (tests). The changelogging
wrapper (:class:`deltastreams.state.ChangeLoggingStore`) records every change as a :class:`ChangelogEntry` and
holds the batch's writes pending: they reach the store only as committed changelog entries.

Queries see typed, read-only views (Kafka's ``ReadOnlyKeyValueStore`` and ``ReadOnlyWindowStore``),
which the operator owning a store provides, since it knows how keys and values are encoded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ChangelogEntry:
    """One change of a store: ``value`` None deletes ``key`` (a tombstone)."""

    key: bytes
    value: bytes | None


@runtime_checkable
class KeyValueStore(Protocol):
    """Ordered bytes -> bytes map."""

    name: str

    def get(self, key: bytes) -> bytes | None: ...

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]: ...

    def range(self, lo: bytes | None = None, hi: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Entries with ``lo <= key < hi`` in key order (``None``: unbounded)."""
        ...

    def write(self, changes: Iterable[ChangelogEntry], meta: Mapping[str, bytes] | None = None) -> None:
        """Apply changes atomically, in order (later entries win), together with ``meta``."""
        ...

    def get_meta(self, key: str) -> bytes | None:
        """Bookkeeping kept beside the data but outside it (e.g. the changelog offset applied)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class ReadOnlyKeyValueStore(Protocol):
    """Typed read access to a key-value store."""

    name: str

    def get(self, key: Any) -> Any:
        """The value of ``key``, or None."""
        ...


@runtime_checkable
class ReadOnlyWindowStore(Protocol):
    """Typed read access to a window store."""

    name: str

    def fetch(self, key: Any, window_start: int) -> Any:
        """The value of ``key`` in the window starting at ``window_start``, or None."""
        ...
