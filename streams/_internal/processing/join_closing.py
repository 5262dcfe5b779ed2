"""When a left join's waiting records go out joined with None (Kafka's spurious-result fix), for
a whole batch at once.

Record by record, a non-joined record of the outer side waits in the outer store (an *item*) from
its position ``a`` until a partner joins it, at ``r`` (the partner's fetch deletes its whole entry,
``time | side | key``), or until a *scan* emits it: a scan runs when a record reaches stream time
and Kafka's quick check on ``minTime`` lets it, and emits every waiting item whose window has
closed (``time + lookback + grace < stream time``). Stream time only grows, so an item goes out at
the first scan after ``a`` whose stream time is past its close, if that scan comes no later than
``r`` (a scan at ``r`` runs before the partner's fetch): one binary search each, once the scans are
known.

Which records scan depends on ``minTime``, which each scan resets to the time of the last entry it
visits (the largest waiting time, with one outer side) and each new item lowers; that recurrence
is the one sequential step, a loop over the records that reach stream time with a few integer
operations each. The largest waiting time at each position comes from the items' lifetimes
``(a, r]`` beforehand; an item is still waiting at a scan unless the previous scan emitted it,
and (as an item's window is open when it is put) only all of them together can have been.

Covers joins with one outer side and windows with non-negative ``before`` and ``after``, where an
item's window is open when it is put; the caller takes other joins record by record.
"""

from __future__ import annotations

import numpy as np

LONG_MAX = 2**63 - 1
_NONE = np.iinfo(np.int64).min


def removal_positions(item_entry: np.ndarray, item_pos: np.ndarray, event_entry: np.ndarray, event_pos: np.ndarray, n: int) -> np.ndarray:
    """For each item, the first position after its own at which a fetch deletes its entry (``n``
    for none): a later item of the same entry waits for a later deletion."""
    removed = np.full(len(item_entry), n, dtype=np.int64)
    if not len(event_entry) or not len(item_entry):
        return removed
    order = np.lexsort((event_pos, event_entry))
    entries, positions = event_entry[order], event_pos[order]
    width = n + 2
    at = np.searchsorted(entries * width + positions + 1, item_entry * width + item_pos + 1, "right")
    found = at < len(entries)
    hit = np.flatnonzero(found)
    same = entries[at[hit]] == item_entry[hit]
    removed[hit[same]] = positions[at[hit[same]]]
    return removed


def waiting_max(at: np.ndarray, item_pos: np.ndarray, removed: np.ndarray, times: np.ndarray, n: int) -> np.ndarray:
    """For each position of ``at`` (ascending), the largest time of the items with ``item_pos <
    position <= removed`` (the items a scan there can see, before emissions), or the minimum
    int64 for none; ``removed >= n``: never."""
    out = np.full(len(at), _NONE, dtype=np.int64)
    if not len(at) or not len(item_pos):
        return out
    forever = removed >= n
    by_pos = np.argsort(item_pos[forever], kind="stable")
    running = np.maximum.accumulate(times[forever][by_pos]) if by_pos.size else by_pos
    seen = np.searchsorted(item_pos[forever][by_pos], at, "left")  # items put before each position
    out[seen > 0] = running[seen[seen > 0] - 1]
    # The others live in [item_pos + 1, removed]: as ranges of ``at``, each is two overlapping
    # power-of-two blocks; maxima per block size, pushed down to single positions.
    lo = np.searchsorted(at, item_pos[~forever] + 1, "left")
    hi = np.searchsorted(at, removed[~forever], "right") - 1
    value = times[~forever]
    live = lo <= hi
    lo, hi, value = lo[live], hi[live], value[live]
    if not len(lo):
        return out
    level = np.frexp((hi - lo + 1).astype(np.float64))[1] - 1
    blocks = [np.full(len(at), _NONE, dtype=np.int64) for _ in range(int(level.max()) + 1)]
    for k, block in enumerate(blocks):
        chosen = level == k
        np.maximum.at(block, lo[chosen], value[chosen])
        np.maximum.at(block, hi[chosen] - (1 << k) + 1, value[chosen])
    for k in range(len(blocks) - 1, 0, -1):
        half, upper, lower = 1 << (k - 1), blocks[k], blocks[k - 1]
        np.maximum(lower, upper, out=lower)
        np.maximum(lower[half:], upper[:-half], out=lower[half:])
    return np.maximum(out, blocks[0])


def scan_positions(
    candidates: np.ndarray,
    stream: np.ndarray,
    afters: np.ndarray,
    grace: int,
    lookback: int,
    item_pos: np.ndarray,
    item_time: np.ndarray,
    waiting: np.ndarray,
    min_time: int | None,
) -> tuple[np.ndarray, int | None]:
    """The positions among ``candidates`` (records at stream time, ascending) whose quick check
    lets the scan run, and ``minTime`` after the batch. ``afters``: each candidate's side's
    ``after``; ``waiting``: :func:`waiting_max` at each candidate; items with position -1 were
    waiting before the batch."""
    m = len(candidates)
    if not m:
        fresh = item_time[item_pos >= 0]
        low = int(fresh.min()) if len(fresh) else LONG_MAX
        kept = LONG_MAX if min_time is None else min_time
        return candidates, None if min(kept, low) == LONG_MAX else min(kept, low)
    # the least time of the items put between consecutive candidates (one put at a candidate
    # comes after its scan), and after the last
    put = np.full(len(stream) + 1, LONG_MAX, dtype=np.int64)
    fresh = item_pos >= 0
    np.minimum.at(put, item_pos[fresh] + 1, item_time[fresh])
    segment_min = np.minimum.reduceat(put, np.concatenate([[0], candidates + 1])).tolist()
    at_stream = stream[candidates].tolist()
    after_grace = (afters + grace).tolist()
    largest = waiting.tolist()
    scans = []
    low = LONG_MAX if min_time is None else min_time
    previous = None
    for c in range(m):
        if segment_min[c] < low:
            low = segment_min[c]
        bound = low + after_grace[c]
        if bound > LONG_MAX:  # Java's long addition wraps
            bound = (bound + 2**63) % 2**64 - 2**63
        if bound >= at_stream[c]:
            continue
        scans.append(c)
        top = largest[c]
        # the scan visits every waiting entry; minTime is the last one's time
        low = LONG_MAX if top == _NONE or (previous is not None and top + lookback + grace < previous) else top
        previous = at_stream[c]
    low = min(low, segment_min[m])
    return candidates[np.asarray(scans, dtype=np.int64)], None if low == LONG_MAX else low


def emitted_at(scans: np.ndarray, stream: np.ndarray, item_pos: np.ndarray, item_time: np.ndarray, removed: np.ndarray, close_after: int) -> np.ndarray:
    """The scan position that emits each item, or -1: the first scan after the item was put whose
    stream time is past ``time + close_after``, if the entry is still there."""
    out = np.full(len(item_pos), -1, dtype=np.int64)
    if not len(scans) or not len(item_pos):
        return out
    at = np.maximum(np.searchsorted(scans, item_pos, "right"), np.searchsorted(stream[scans], item_time + close_after, "right"))
    found = np.flatnonzero(at < len(scans))
    where = scans[at[found]]
    keep = where <= removed[found]
    out[found[keep]] = where[keep]
    return out
