"""The stores of a stream-stream join: each side's window store, and the shared store of records
still waiting for a partner (Kafka's outer-join store).

:class:`JoinWindowStore` is Kafka's window store with duplicates retained: every record of a
side, under ``k | len(key) | key | time | seq``, so the records of one key in a time range are one
key range, in (time, arrival) order, as Kafka's ``fetch(key, from, to)`` returns them. Like
Kafka's, the store keeps ``retention = before + after + grace`` behind the largest time put into it
(its observed stream time): older records are invisible to fetches and are purged once a batch,
through a time index ``t | time | seq`` (a purge is a range scan from a floor, not a full scan).

:class:`OuterJoinStore` holds the records of a left/outer join side that have not joined yet, in
Kafka's order ``time | side | key`` (left side ``1``, right ``0``), a list of values per entry
(Kafka's ListValueStore), plus the join's shared stream time and Kafka's ``minTime``. It is read
into memory when first scanned in a batch and written through, since emitting closed records
walks it from the start.

Both also take a whole batch at once (:meth:`JoinWindowStore.committed` /
:meth:`JoinWindowStore.write_batch`, :meth:`OuterJoinStore.committed` /
:meth:`OuterJoinStore.write_batch`), for a join that works out the batch's effect itself: they
leave the store as the record-at-a-time calls would, but a record that comes and goes within the
batch (expired by the end-of-batch purge, or joined before the batch ends) costs no changelog
entry, where one at a time it cost a put and a delete of each of its keys.

Values are pickled Python objects, as the table stores keep them. Bookkeeping lives under keys
starting with ``0xff``, beyond every data key.
"""

from __future__ import annotations

import bisect
import pickle
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from deltastreams.state._internal.ordered import get_long, pack_long, pack_time, purge_indexed, unpack_long, unpack_time

_LEN = struct.Struct(">I")
_OBSERVED_KEY = b"\xff\xffobserved-stream-time"
_FLOOR_KEY = b"\xff\xffpurge-floor"
_SEQ_KEY = b"\xff\xffnext-seq"
_STREAM_TIME_KEY = b"\xff\xffstream-time"
_MIN_TIME_KEY = b"\xff\xffmin-time"
NO_TIME = -1

LEFT, RIGHT = 1, 0
"""Kafka's join side byte in the outer store's key."""


class JoinWindowStore:
    """One side's records, by key and time, duplicates kept (over a ChangeLoggingStore)."""

    def __init__(self, store, retention_ms: int) -> None:
        self.store = store
        self.name = store.name
        self.retention_ms = retention_ms
        self.observed = get_long(store, _OBSERVED_KEY, NO_TIME)
        self._next_seq = get_long(store, _SEQ_KEY, 0)
        self._cached: dict[bytes, list[tuple[int, int, Any]]] = {}

    def begin_batch(self) -> None:
        """Re-read the bookkeeping: the previous batch's writes were committed or thrown away."""
        self.observed = get_long(self.store, _OBSERVED_KEY, NO_TIME)
        self._next_seq = get_long(self.store, _SEQ_KEY, 0)
        self._cached.clear()

    def preload(self, keys) -> None:
        """Read the records of ``keys`` now, while the batch has written nothing: a range read
        over the batch's pending writes sorts them all, once per key."""
        for key in keys:
            self._entries(key)

    @staticmethod
    def _prefix(key: bytes) -> bytes:
        return b"k" + _LEN.pack(len(key)) + key

    def _entries(self, key: bytes) -> list[tuple[int, int, Any]]:
        """The key's records as ``(time, seq, value)`` in store order, read once per batch."""
        entries = self._cached.get(key)
        if entries is None:
            prefix = self._prefix(key)
            entries = []
            for raw_key, raw_value in self.store.range(prefix, prefix + b"\xff" * 17):
                n = len(prefix)
                entries.append((unpack_time(raw_key, n), unpack_long(raw_key, n + 8), pickle.loads(raw_value)))
            self._cached[key] = entries
        return entries

    def put(self, key: bytes, value: Any, time: int) -> None:
        self.observed = max(self.observed, time)
        if time <= self.observed - self.retention_ms:
            return  # already expired: Kafka's window store skips it
        entries = self._entries(key)  # read before writing, or the cache would hold it twice
        seq = self._next_seq
        self._next_seq += 1
        data_key = self._prefix(key) + pack_time(time) + pack_long(seq)
        self.store.put(data_key, pickle.dumps(value, protocol=5))
        self.store.put(b"t" + pack_time(time) + pack_long(seq), data_key)
        bisect.insort(entries, (time, seq, value), key=lambda e: (e[0], e[1]))

    def fetch(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        """``(time, value)`` of the key's live records with ``time_from <= time <= time_to``, in
        (time, arrival) order."""
        time_from = max(time_from, self.observed - self.retention_ms + 1)
        if time_to < time_from:
            return []
        entries = self._entries(key)
        lo = bisect.bisect_left(entries, time_from, key=lambda e: e[0])
        hi = bisect.bisect_right(entries, time_to, key=lambda e: e[0])
        return [(t, v) for t, _, v in entries[lo:hi]]

    def end_batch(self) -> None:
        """Persist the bookkeeping and purge what fell out of retention."""
        self.store.put(_OBSERVED_KEY, pack_long(self.observed))
        self.store.put(_SEQ_KEY, pack_long(self._next_seq))
        if self.observed != NO_TIME and purge_indexed(self.store, _FLOOR_KEY, self.observed - self.retention_ms):
            self._cached.clear()

    # -- a whole batch at once ----------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def committed(self, keys: Mapping[bytes, int], time_from: int, time_to: int) -> list[tuple[int, int, int, bytes]]:
        """``(keys[key], time, seq, pickled value)`` of the committed records of the keys of
        ``keys`` with ``time_from <= time <= time_to``, before the batch writes anything. A small
        store is read through the time index (from the purge floor at least, so over no deleted
        keys); where that range holds many more records than the batch has keys, one key range at
        a time."""
        floor = get_long(self.store, _FLOOR_KEY, None)
        low = time_from if floor is None else max(floor, time_from)
        if time_to < low:
            return []
        budget = 4 * len(keys) + 64
        data_keys = []
        for n, (_, data_key) in enumerate(self.store.range(b"t" + pack_time(low), b"t" + pack_time(time_to + 1))):
            if n == budget:
                return self._committed_by_key(keys, low, time_to)
            data_keys.append(data_key)
        found = []
        for data_key in data_keys:
            n = _LEN.unpack_from(data_key, 1)[0]
            i = keys.get(data_key[5 : 5 + n])
            if i is not None:
                found.append((i, data_key, 5 + n))
        raws = self.store.get_many([data_key for _, data_key, _ in found])
        return [(i, unpack_time(dk, at), unpack_long(dk, at + 8), raw) for (i, dk, at), raw in zip(found, raws, strict=True)]

    def _committed_by_key(self, keys: Mapping[bytes, int], time_from: int, time_to: int) -> list[tuple[int, int, int, bytes]]:
        out = []
        low, high = pack_time(time_from), pack_time(time_to + 1)
        for key, i in keys.items():
            prefix = self._prefix(key)
            n = len(prefix)
            for raw_key, raw_value in self.store.range(prefix + low, prefix + high):
                out.append((i, unpack_time(raw_key, n), unpack_long(raw_key, n + 8), raw_value))
        return out

    def purge_cutoff(self, observed: int) -> int | None:
        """The time at or before which the end-of-batch purge, at ``observed``, deletes records
        (None: it does not run)."""
        if observed == NO_TIME:
            return None
        floor = get_long(self.store, _FLOOR_KEY, None)
        cutoff = observed - self.retention_ms
        return None if floor is not None and cutoff < floor else cutoff

    def write_batch(self, puts: int, records: Sequence[tuple[bytes, int, int, Any]], observed: int) -> None:
        """What :meth:`put` of the batch's ``puts`` records and :meth:`end_batch` leave, given
        the observed stream time after them and the records the purge keeps: ``(key, time, i,
        value)``, ``i`` the record's place among the puts (its seq is :attr:`next_seq` + ``i``).
        Records the purge deletes again need not be given: they are never written."""
        first_seq = self._next_seq
        self._next_seq += puts
        self.observed = observed
        self.store.put(_OBSERVED_KEY, pack_long(self.observed))
        self.store.put(_SEQ_KEY, pack_long(self._next_seq))
        cutoff = self.purge_cutoff(observed)
        if cutoff is not None:
            purge_indexed(self.store, _FLOOR_KEY, cutoff)
        for key, time, i, value in records:
            if cutoff is not None and time <= cutoff:
                continue
            stamp = pack_time(time) + pack_long(first_seq + i)
            data_key = self._prefix(key) + stamp
            self.store.put(data_key, pickle.dumps(value, protocol=5))
            self.store.put(b"t" + stamp, data_key)
        self._cached.clear()


class OuterJoinStore:
    """Records waiting for a partner, ordered by (time, side, key); shared by both sides."""

    def __init__(self, store) -> None:
        self.store = store
        self.name = store.name
        self._keys: list[bytes] | None = None
        self._lists: dict[bytes, list[tuple[Any, Any]]] = {}

    def begin_batch(self) -> tuple[int, int | None]:
        """``(stream_time, min_time)`` as committed (``min_time`` None: Kafka's Long.MAX_VALUE)."""
        self._keys = None
        self._lists.clear()
        return get_long(self.store, _STREAM_TIME_KEY, NO_TIME), get_long(self.store, _MIN_TIME_KEY, None)

    def end_batch(self, stream_time: int, min_time: int | None) -> None:
        self.store.put(_STREAM_TIME_KEY, pack_long(stream_time))
        if min_time is None:
            self.store.delete(_MIN_TIME_KEY)
        else:
            self.store.put(_MIN_TIME_KEY, pack_long(min_time))
        self._keys = None
        self._lists.clear()

    @staticmethod
    def entry_key(time: int, side: int, key: bytes) -> bytes:
        return pack_time(time) + bytes((side,)) + key

    @staticmethod
    def split(entry_key: bytes) -> tuple[int, int]:
        """``(time, side)`` of an entry key."""
        return unpack_time(entry_key), entry_key[8]

    def _load(self) -> list[bytes]:
        if self._keys is None:
            self._keys = []
            for raw_key, raw_value in self.store.range(None, b"\xff"):
                self._keys.append(raw_key)
                self._lists[raw_key] = pickle.loads(raw_value)
        return self._keys

    def _read(self, entry_key: bytes) -> list[tuple[Any, Any]] | None:
        if self._keys is not None:
            return self._lists.get(entry_key)
        raw = self.store.get(entry_key)
        return None if raw is None else pickle.loads(raw)

    def append(self, entry_key: bytes, key: Any, value: Any) -> None:
        """Add a waiting record (Kafka's ListValueStore put)."""
        items = self._read(entry_key)
        fresh = items is None
        items = [(key, value)] if fresh else [*items, (key, value)]
        self.store.put(entry_key, pickle.dumps(items, protocol=5))
        if self._keys is not None:
            if fresh:
                bisect.insort(self._keys, entry_key)
            self._lists[entry_key] = items

    def remove(self, entry_key: bytes) -> None:
        """Forget every record under ``entry_key`` (Kafka deletes the whole list)."""
        if self._keys is not None:
            if entry_key not in self._lists:
                return
            del self._lists[entry_key]
            self._keys.pop(bisect.bisect_left(self._keys, entry_key))
        elif self.store.get(entry_key) is None:
            return
        self.store.delete(entry_key)

    def committed(self) -> list[tuple[int, int, bytes, bytes]]:
        """``(time, side, key, pickled list)`` of every waiting entry, in store order, before the
        batch writes anything."""
        return [(unpack_time(k), k[8], k[9:], raw) for k, raw in self.store.range(None, b"\xff")]

    def write_batch(self, changed: dict[bytes, list[tuple[Any, Any]] | None], stream_time: int, min_time: int | None) -> None:
        """The entries the batch changed (None: gone) and the join's times after it."""
        for entry_key, items in changed.items():
            if items is None:
                self.store.delete(entry_key)
            else:
                self.store.put(entry_key, pickle.dumps(items, protocol=5))
        self.end_batch(stream_time, min_time)

    def entries(self) -> Iterator[tuple[bytes, Any, Any]]:
        """``(entry_key, key, value)`` for every waiting record, in order. Removing the entry
        being visited, or earlier ones, is allowed while iterating."""
        keys = self._load()
        i = 0
        while i < len(keys):
            entry_key = keys[i]
            for key, value in list(self._lists[entry_key]):
                yield entry_key, key, value
            i = bisect.bisect_right(keys, entry_key)  # entries before it may have gone meanwhile
