"""A typed store's entries ordered by their value, a time, so a purge takes what is due instead of
scanning the store.

A purge by scan reads the whole store each time, and the store's reads go over the batch's
pending writes too, which grow with the batch: with a purge at every stream-time punctuation, a
batch's purges cost the square of its size. The index is a heap of ``(time, key)``, built from one
scan of the store at the batch's first purge and pushed onto by every later write of the batch, so
a purge pops the entries at or before its time, each once. An entry popped whose key has been
written or deleted since is passed over (the key's current time decides). The index is the batch's
only: it is memory, not the store, so the store's contents and changelog are those of a purge by
scan.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable


class TimeIndex:
    """Keys (as stored) by time, for one batch."""

    def __init__(self, entries: Iterable[tuple[bytes, int]]) -> None:
        self._times = dict(entries)
        self._heap = [(time, key) for key, time in self._times.items()]
        heapq.heapify(self._heap)

    def write(self, keys: Iterable[bytes], times: Iterable[int | None]) -> None:
        """Keys put with these times (None: deleted)."""
        current, heap = self._times, self._heap
        for key, time in zip(keys, times, strict=True):
            if time is None:
                current.pop(key, None)
            elif current.get(key) != time:
                current[key] = time
                heapq.heappush(heap, (time, key))

    def due(self, until: int) -> list[bytes]:
        """The keys whose time is at or before ``until``, by time (then key), forgotten here."""
        current, heap, out = self._times, self._heap, []
        while heap and heap[0][0] <= until:
            time, key = heapq.heappop(heap)
            if current.get(key) == time:
                del current[key]
                out.append(key)
        return out
