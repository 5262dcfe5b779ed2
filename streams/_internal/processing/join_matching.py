"""Which stored records each record of a batch finds in a stream-stream join's window, for the
whole batch at once.

A record at position ``p`` (the order the task takes the batch's records in) fetches the other
side's store for its key and a time range; what the store holds then is the records committed
before the batch and the batch's records put before ``p``. So the partners are the stored records
with the record's key, a time in its range and a position before ``p``, in the order Kafka's
``fetch`` returns them: time, then arrival (the store's seq). One sort of the stored records by
(key, time, seq) and two binary searches per record find each record's candidates as a slice; the
slices hold the pairs within the window in either order, so filtering out the later-put ones
costs at most as much again as the matches themselves.
"""

from __future__ import annotations

import numpy as np


def window_matches(
    query_key: np.ndarray,
    query_pos: np.ndarray,
    time_from: np.ndarray,
    time_to: np.ndarray,
    entry_key: np.ndarray,
    entry_time: np.ndarray,
    entry_seq: np.ndarray,
    entry_pos: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(query, entry)`` index pairs: ``entry_key == query_key``, ``time_from <= entry_time <=
    time_to`` and ``entry_pos < query_pos``, ordered by query, then by (time, seq) of the entry.
    Keys are small non-negative ints (codes); committed entries have position -1."""
    if not len(query_key) or not len(entry_key):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    by_store_order = np.lexsort((entry_seq, entry_time, entry_key))
    keys, times = entry_key[by_store_order], entry_time[by_store_order]
    # (key, time) as one int, so a (key, time range) is one searchsorted range: the time as an
    # offset when key * span fits, else as a rank among the stored times.
    low = int(times.min())
    span = int(times.max()) - low + 2
    if span * (max(int(keys.max()), int(query_key.max())) + 1) < 2**62:
        composite = keys * span + (times - low)
        first = query_key * span + np.clip(time_from - low, 0, span - 1)
        last = query_key * span + np.clip(time_to - low, -1, span - 2)
    else:
        distinct = np.unique(times)
        span = len(distinct) + 1
        composite = keys * span + np.searchsorted(distinct, times)
        first = query_key * span + np.searchsorted(distinct, time_from, "left")
        last = query_key * span + np.searchsorted(distinct, time_to, "right") - 1
    # sorted needles search faster (each search starts from the last one)
    order = np.argsort(first, kind="stable")
    starts, ends = np.empty_like(first), np.empty_like(first)
    starts[order] = np.searchsorted(composite, first[order], "left")
    ends[order] = np.searchsorted(composite, last[order], "right")
    counts = np.maximum(ends - starts, 0)
    total = int(counts.sum())
    if not total:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    queries = np.repeat(np.arange(len(query_key)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    entries = by_store_order[np.repeat(starts, counts) + offsets]
    earlier = entry_pos[entries] < query_pos[queries]
    return queries[earlier], entries[earlier]
