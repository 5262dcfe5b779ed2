"""A session store: one aggregate per (key, session), found by key and time, as Kafka's
``SessionStore``.

Sessions of a key live under ``k | len(key) | key | end | start``, so a key's sessions are one key
range in (end, start) order, the order Kafka's ``findSessions`` returns them in. Like Kafka's, the
store keeps ``retention = gap + grace`` behind the largest session end put into it: older sessions
are invisible (with caching, but for those the current input record wrote, which Kafka's record
cache still holds), and are purged once a batch through a time index ``t | end | start | key``. A key's
sessions are read once per batch (before any write, see :meth:`preload`) and kept in memory
meanwhile, since a range read over a batch's pending writes sorts them all.
"""

from __future__ import annotations

import bisect
import pickle
import struct
from collections.abc import Iterable
from typing import Any

from deltastreams.state._internal.ordered import get_long, pack_long, pack_time, purge_indexed, unpack_time

_LEN = struct.Struct(">I")
_OBSERVED_KEY = b"\xff\xffobserved-stream-time"
_STREAM_TIME_KEY = b"\xff\xffstream-time"
_FLOOR_KEY = b"\xff\xffpurge-floor"
NO_TIME = -1


Session = tuple[int, int, Any]
"""``(start, end, aggregate)``; both ends inclusive, as Kafka's SessionWindow."""


class SessionStore:
    """Sessions by key over a ChangeLoggingStore, plus the stream time its processor observed."""

    def __init__(self, store, retention_ms: int, *, caching: bool = False) -> None:
        self.store = store
        self.name = store.name
        self.retention_ms = retention_ms
        self.caching = caching
        """Sessions the current input record wrote stay visible past retention, as in Kafka's
        record cache, which holds what a commit wrote (Kafka's test driver commits after every
        record). Longer than that, Kafka's cache depends on its commits and its memory; here
        results must not depend on how records are batched (docs/differences-from-kafka.md)."""
        self._record: int | None = None
        self.begin_batch()

    def begin_batch(self) -> None:
        """Re-read the bookkeeping: the previous batch's writes were committed or thrown away."""
        self.observed = get_long(self.store, _OBSERVED_KEY, NO_TIME)
        self.stream_time = get_long(self.store, _STREAM_TIME_KEY, NO_TIME)
        self._cached: dict[bytes, list[Session]] = {}
        self._written: set[tuple[bytes, int, int]] = set()

    def begin_record(self, seq: int) -> None:
        """The writes that follow come from input record ``seq`` (see ``caching``)."""
        if seq != self._record:
            self._record = seq
            self._written.clear()

    @staticmethod
    def _prefix(key: bytes) -> bytes:
        return b"k" + _LEN.pack(len(key)) + key

    def preload(self, keys: Iterable[bytes]) -> None:
        for key in keys:
            self._sessions(key)

    def _sessions(self, key: bytes) -> list[Session]:
        sessions = self._cached.get(key)
        if sessions is None:
            prefix = self._prefix(key)
            n = len(prefix)
            sessions = [
                (unpack_time(raw_key, n + 8), unpack_time(raw_key, n), pickle.loads(raw_value))
                for raw_key, raw_value in self.store.range(prefix, prefix + b"\xff" * 17)
            ]
            self._cached[key] = sessions
        return sessions

    def find_sessions(self, key: bytes, earliest_end: int, latest_start: int) -> list[Session]:
        """Live sessions of ``key`` with ``end >= earliest_end`` and ``start <= latest_start``, in
        (end, start) order."""
        live_from = self.observed - self.retention_ms + 1
        return [
            s for s in self._sessions(key)
            if s[1] >= earliest_end and s[0] <= latest_start and (s[1] >= live_from or (key, s[0], s[1]) in self._written)
        ]

    def fetch(self, key: bytes) -> list[Session]:
        """Every live session of ``key``."""
        return self.find_sessions(key, -(2**62), 2**62)

    def put(self, key: bytes, start: int, end: int, aggregate: Any) -> None:
        sessions = self._sessions(key)
        self.observed = max(self.observed, end)
        if self.caching:
            self._written.add((key, start, end))
        session_key = self._prefix(key) + pack_time(end) + pack_time(start)
        self.store.put(session_key, pickle.dumps(aggregate, protocol=5))
        self.store.put(b"t" + pack_time(end) + pack_time(start) + key, session_key)
        i = bisect.bisect_left(sessions, (end, start), key=lambda s: (s[1], s[0]))
        if i < len(sessions) and sessions[i][:2] == (start, end):
            sessions[i] = (start, end, aggregate)
        else:
            sessions.insert(i, (start, end, aggregate))

    def remove(self, key: bytes, start: int, end: int) -> None:
        sessions = self._sessions(key)
        self._written.discard((key, start, end))
        self.store.delete(self._prefix(key) + pack_time(end) + pack_time(start))
        self.store.delete(b"t" + pack_time(end) + pack_time(start) + key)
        sessions[:] = [s for s in sessions if s[:2] != (start, end)]

    def ending_between(self, lowest_end: int, highest_end: int) -> list[tuple[bytes, int, int, Any]]:
        """``(key, start, end, aggregate)`` of every key's sessions with ``lowest_end <= end <=
        highest_end`` still in the store, in (end, start, key) order (Kafka's time-ordered
        session store, whose range reads are not cut by retention: see :meth:`end_batch`)."""
        found = []
        for index_key, session_key in self.store.range(b"t" + pack_time(lowest_end), b"t" + pack_time(highest_end + 1)):
            raw = self.store.get(session_key)
            if raw is not None:
                found.append((index_key[17:], unpack_time(index_key, 9), unpack_time(index_key, 1), pickle.loads(raw)))
        return found

    def first_end_from(self, lowest_end: int) -> int | None:
        """The smallest end, at or after ``lowest_end``, of any key's session still in the store
        (what must close next, for idle close); one step into the time index."""
        for index_key, session_key in self.store.range(b"t" + pack_time(lowest_end), b"u"):
            if self.store.get(session_key) is not None:
                return unpack_time(index_key, 1)
        return None

    def end_batch(self, keep_from: int | None = None) -> None:
        """Persist the stream times and purge the sessions that fell out of retention, except
        those ending at or after ``keep_from`` (final results not emitted yet)."""
        self.store.put(_OBSERVED_KEY, pack_long(self.observed))
        self.store.put(_STREAM_TIME_KEY, pack_long(self.stream_time))
        cutoff = self.observed - self.retention_ms  # sessions ending at or before it are dead
        if keep_from is not None:
            cutoff = min(cutoff, keep_from - 1)
        if self.observed != NO_TIME and purge_indexed(self.store, _FLOOR_KEY, cutoff):
            self._cached.clear()
