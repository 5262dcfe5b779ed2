"""Time-keyed views over a key-value store: window stores and the suppression buffer.

Keys start with a big-endian time (window start for window stores, window end for the
suppression buffer), so "everything older than T" is one key range: purging expired windows and
emitting closed ones are range scans, not full scans. Window starts are never negative (windows
are aligned to the epoch from 0, as in Kafka), so data keys begin with a byte below 0x80 and the
store's own bookkeeping (its stream time, its floor) lives under keys beginning with 0xff, beyond
any range.

The *floor* is a time below which the store holds nothing: :meth:`TimeKeyedStore.take_up_to`
raises it past what it removed, a put below it lowers it. Scans start there, not at key 0: RocksDB
keeps every deleted or overwritten entry in its memtable until a flush, and a scan from key 0
stepped over all of them. In a 30-minute soak the windowed count's process time grew from 10 ms to
52 ms a batch that way (a scan over 8 live rows: 0.8 ms after 5,000 batches, 8-16 ms after
10,000-30,000, measured on its own). The floor is a store entry like any other: pending with the
batch, changelogged, restored.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

from deltastreams.state.stores import ChangelogEntry

_TIME = struct.Struct(">q")
_STREAM_TIME_KEY = b"\xff\xffstream-time"
_FLOOR_KEY = b"\xff\xfffloor"
NO_STREAM_TIME = -1  # Kafka's "no record observed yet"


def time_key(time: int, suffix: bytes = b"") -> bytes:
    return _TIME.pack(time) + suffix


def split_time_key(key: bytes) -> tuple[int, bytes]:
    return _TIME.unpack_from(key)[0], key[8:]


class TimeKeyedStore:
    """Entries keyed by (time, bytes) over a changelogging key-value store, plus the stream time
    the owning processor has observed (persisted, changelogged, restored with the rest)."""

    def __init__(self, store) -> None:  # a ChangeLoggingStore
        self.store = store
        self.name = store.name

    def get(self, time: int, suffix: bytes) -> bytes | None:
        return self.store.get(time_key(time, suffix))

    def get_many(self, keys: Sequence[tuple[int, bytes]]) -> list[bytes | None]:
        return self.store.get_many([time_key(t, s) for t, s in keys])

    def put(self, time: int, suffix: bytes, value: bytes) -> ChangelogEntry:
        floor = self._floor()
        if floor is not None and time < floor:
            self.store.put(_FLOOR_KEY, _TIME.pack(time))
        return self.store.put(time_key(time, suffix), value)

    def delete(self, time: int, suffix: bytes) -> ChangelogEntry:
        return self.store.delete(time_key(time, suffix))

    def up_to(self, time: int) -> Iterator[tuple[int, bytes, bytes]]:
        """Entries with key time <= ``time``, in (time, suffix) order."""
        yield from self._scan(time, self._floor())

    def _scan(self, time: int, floor: int | None) -> Iterator[tuple[int, bytes, bytes]]:
        if time < 0 or (floor is not None and time < floor):
            return
        for key, value in self.store.range(None if floor is None else time_key(floor), time_key(time + 1)):
            t, suffix = split_time_key(key)
            yield t, suffix, value

    def take_up_to(self, time: int) -> list[tuple[int, bytes, bytes]]:
        """Remove and return the entries with key time <= ``time``, in (time, suffix) order
        (closed windows purged, final results emitted); the floor rises past them."""
        floor = self._floor()
        taken = list(self._scan(time, floor))
        for t, suffix, _ in taken:
            self.store.delete(time_key(t, suffix))
        self.forget_up_to(time, floor)
        return taken

    def forget_up_to(self, time: int, floor: int | None = None) -> None:
        """Declare that no entry with key time <= ``time`` is left (its owner deleted them), so
        scans start past them."""
        floor = self._floor() if floor is None else floor
        if time >= 0 and (floor is None or time + 1 > floor):
            self.store.put(_FLOOR_KEY, _TIME.pack(time + 1))

    def _floor(self) -> int | None:
        raw = self.store.get(_FLOOR_KEY)
        return None if raw is None else _TIME.unpack(raw)[0]

    def all(self) -> Iterator[tuple[int, bytes, bytes]]:
        for key, value in self.store.range(None, b"\xff"):
            t, suffix = split_time_key(key)
            yield t, suffix, value

    @property
    def stream_time(self) -> int:
        raw = self.store.get(_STREAM_TIME_KEY)
        return NO_STREAM_TIME if raw is None else _TIME.unpack(raw)[0]

    @stream_time.setter
    def stream_time(self, value: int) -> None:
        self.store.put(_STREAM_TIME_KEY, _TIME.pack(value))
