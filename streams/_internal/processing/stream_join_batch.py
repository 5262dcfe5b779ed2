"""A stream-stream join's batch an array at a time, with the results Kafka's processors give
record by record (:mod:`deltastreams.streams._internal.processing.stream_joins` says how both sides share one
order, ``_seq``, and runs them that way when this module does not cover a join).

What a record does depends on what came before it only through a few running values, each a
prefix maximum over the batch in that order: the task's stream time, and each window store's
observed stream time (which decides whether a put is already expired and where a fetch's range
starts). With those, every record's partners are a range join of the batch against the stores
(:mod:`~deltastreams.streams._internal.processing.join_matching`), and a left join's waiting records follow
from the partners and the stream times (:mod:`~deltastreams.streams._internal.processing.join_closing`). Only
the joiner runs per result, in the order Kafka calls it: by record, then the closed waiting
records it emits, its partners in fetch order, and its own non-joined result.

The stores end as the record-at-a-time processors leave them, written once at the end of the
batch: a record expired by the end-of-batch purge, or a waiting record joined or emitted within
the batch, is never written (nor deleted again).
"""

from __future__ import annotations

import functools
import operator
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from deltastreams.sinks.serde import key_bytes
from deltastreams.state.join_stores import LEFT, NO_TIME, RIGHT, JoinWindowStore, OuterJoinStore
from deltastreams.streams._internal.processing.flow import Flow
from deltastreams.streams._internal.processing.join_closing import emitted_at, removal_positions, scan_positions, waiting_max
from deltastreams.streams._internal.processing.join_matching import window_matches
from deltastreams.streams._internal.processing.operator import ProcessContext
from deltastreams.streams._internal.processing.walk import walks
from deltastreams.topology.nodes import JoinWindowsSpec
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE

_TIME_LIMIT = 2**62
"""Timestamps and windows from here on go record by record: below it, Kafka's Long.MAX_VALUE for
"no minTime" cannot be a record's time, and sums of a time and a window fit in an int64."""

ARRAYS_FROM = 100
"""Batches of fewer records go record by record: the array path's fixed cost (a few hundred NumPy
and Arrow calls) is the larger below about this size."""

_SCAN, _PARTNER, _ALONE = 0, 1, 2
"""What a result of a record is, in the order Kafka forwards them: closed waiting records first
(emitNonJoinedOuterRecords runs before the fetch), then the partners, then the record alone."""


@dataclass
class SideOutput:
    """The results one side's join processor forwards in a batch, in order."""

    seqs: np.ndarray
    walks: list[bytes] | None
    keys: list[Any]
    values: list[Any]
    stamps: np.ndarray


def covers(windows: JoinWindowsSpec, outer_sides: frozenset[int], records: int) -> bool:
    """Whether :func:`join_batch` takes this join's batch of ``records``: windows that do not
    reach back past their own record (a waiting record's window is open when it is put), at most
    one outer side, and enough records to be worth it."""
    return (
        windows.before_ms >= 0 and windows.after_ms >= 0 and windows.retention_ms < _TIME_LIMIT
        and len(outer_sides) < 2 and records >= ARRAYS_FROM
    )


@dataclass
class _Batch:
    """Both sides' records in the order the task takes them (a record's *position*)."""

    side: np.ndarray
    row: np.ndarray  # index into the two flows' concatenated lists (left first)
    stamps: np.ndarray
    seqs: np.ndarray
    codes: np.ndarray  # the key's code in ``keys``, -1 for a null key
    has_value: np.ndarray
    key_array: pa.Array  # the batch's distinct serialized keys
    key_objects: list[Any]
    values: list[Any]
    paths: list[bytes] | None

    @property
    def valid(self) -> np.ndarray:
        return (self.codes >= 0) & self.has_value

    @functools.cached_property
    def keys(self) -> list[bytes]:
        return self.key_array.to_pylist()

    @functools.cached_property
    def code_of(self) -> dict[bytes, int]:
        return {key: i for i, key in enumerate(self.keys)}


def join_batch(
    flows: dict[int, Flow],
    windows: JoinWindowsSpec,
    outer_sides: frozenset[int],
    joiner,
    stores: dict[int, JoinWindowStore],
    outer: OuterJoinStore | None,
    node_names: dict[int, str],
    context: ProcessContext,
) -> dict[int, SideOutput] | None:
    """The batch's results per side, with the stores written; None (nothing read or written)
    when the batch goes record by record instead."""
    batch = _batch(flows)
    if batch is None:
        return None
    for store in stores.values():
        store.begin_batch()
    stream_time0, min_time0 = outer.begin_batch() if outer is not None else (NO_TIME, None)
    waiting = outer.committed() if outer is not None else []
    if any(side not in outer_sides for _, side, _, _ in waiting):
        return None  # left by an outer join of the same name: its other side waits too
    n = len(batch.stamps)
    stream = np.maximum(np.maximum.accumulate(batch.stamps), stream_time0)
    valid = batch.valid

    # Each window store's observed time after each position, and which puts it keeps.
    retention = windows.retention_ms
    observed, stored = {}, {}
    for side, store in stores.items():
        puts = valid & (batch.side == side)
        observed[side] = np.maximum(np.maximum.accumulate(np.where(puts, batch.stamps, NO_TIME)), store.observed)
        stored[side] = np.flatnonzero(puts & (batch.stamps > observed[side] - retention))

    # Each valid record's fetch, as Kafka's KStreamKStreamJoin makes it.
    queries = np.flatnonzero(valid)
    query_side = batch.side[queries]
    is_left = query_side == LEFT
    before = np.where(is_left, windows.before_ms, windows.after_ms)
    after = np.where(is_left, windows.after_ms, windows.before_ms)
    at = batch.stamps[queries]
    other_observed = np.where(is_left, observed[RIGHT][queries], observed[LEFT][queries])
    time_from = np.maximum(np.maximum(at - before, 0), other_observed - retention + 1)
    time_to = np.maximum(at + after, 0)

    # The stored records: committed ones (position -1) in the time the fetches cover, and the
    # batch's kept puts.
    pool = _Pool(batch)
    entry_parts = []
    for side, store in stores.items():
        fetching = query_side != side
        if fetching.any():
            committed = store.committed(batch.code_of, int(time_from[fetching].min()), int(time_to[fetching].max()))
            if committed:
                index, times, seqs, raws = (list(c) for c in zip(*committed, strict=True))
                entry_parts.append((np.asarray(index) * 2 + side, np.asarray(times), np.asarray(seqs), np.full(len(index), -1), pool.add_pickled(raws)))
        puts = stored[side]
        entry_parts.append((batch.codes[puts] * 2 + side, batch.stamps[puts], store.next_seq + np.arange(len(puts)), puts, pool.VALUES + batch.row[puts]))
    entry_key, entry_time, entry_seq, entry_pos, entry_value = (np.concatenate([p[i] for p in entry_parts]).astype(np.int64) for i in range(5))

    match_query, match_entry = window_matches(
        batch.codes[queries] * 2 + (1 - query_side), queries, time_from, time_to, entry_key, entry_time, entry_seq, entry_pos
    )
    match_pos = queries[match_query]

    rows = _Rows()
    this = pool.VALUES + batch.row[match_pos]
    partner = entry_value[match_entry]
    left_side = batch.side[match_pos] == LEFT
    rows.add(
        _PARTNER, match_pos, np.arange(len(match_pos)), pool.KEYS + batch.row[match_pos],
        np.where(left_side, this, partner), np.where(left_side, partner, this), this,
        np.maximum(batch.stamps[match_pos], entry_time[match_entry]),
    )

    outer_mask = np.isin(batch.side, list(outer_sides))
    alone_null_key = outer_mask & (batch.codes < 0) & batch.has_value
    context.drop(int(n - valid.sum() - alone_null_key.sum()))
    min_time, changes = min_time0, {}
    if outer_sides:
        matched = np.zeros(n, dtype=bool)
        matched[match_pos] = True
        full_to = np.zeros(n, dtype=np.int64)
        full_to[queries] = time_to
        lonely = valid & outer_mask & ~matched
        alone = lonely if outer is None else lonely & (full_to < stream)
        alone_pos = np.flatnonzero(alone | alone_null_key)
        own = pool.VALUES + batch.row[alone_pos]
        is_left_alone = batch.side[alone_pos] == LEFT
        keys = np.where(batch.codes[alone_pos] < 0, pool.NONE, pool.KEYS + batch.row[alone_pos])
        rows.add(
            _ALONE, alone_pos, np.zeros(len(alone_pos), dtype=np.int64), keys,
            np.where(is_left_alone, own, pool.NONE), np.where(is_left_alone, pool.NONE, own), own, batch.stamps[alone_pos],
        )
        if outer is not None:
            (outer_side,) = outer_sides
            entry_is_outer = (entry_key[match_entry] & 1) == outer_side
            events = (match_pos[entry_is_outer], entry_time[match_entry][entry_is_outer], entry_key[match_entry][entry_is_outer] // 2)
            min_time, changes = _waiting(batch, windows, outer_side, waiting, lonely & ~alone, events, stream, min_time0, pool, rows)

    outputs = _call_joiner(rows, pool, batch, joiner, node_names, context)
    for side, store in stores.items():
        puts = stored[side]
        final = int(observed[side][-1]) if n else store.observed
        cutoff = store.purge_cutoff(final)
        kept = np.flatnonzero(batch.stamps[puts] > cutoff) if cutoff is not None else np.arange(len(puts))
        store.write_batch(
            len(puts),
            [(batch.keys[c], t, i, batch.values[r]) for c, t, i, r in zip(batch.codes[puts[kept]].tolist(), batch.stamps[puts[kept]].tolist(), kept.tolist(), batch.row[puts[kept]].tolist(), strict=True)],
            final,
        )
    if outer is not None:
        outer.write_batch(changes, int(stream[-1]), min_time)
    return outputs


def _batch(flows: dict[int, Flow]) -> _Batch | None:
    left, right = flows[LEFT], flows[RIGHT]
    if (not len(left) and not len(right)) or left.table.column(TIMESTAMP).null_count or right.table.column(TIMESTAMP).null_count:
        return None
    sides = np.concatenate([np.full(len(left), LEFT), np.full(len(right), RIGHT)]).astype(np.int8)
    seqs = np.concatenate([left.seqs, right.seqs]).astype(np.int64)
    # A record of both sides (a self-join) goes through the left side first, as Kafka's
    # windowed nodes are the source's first and second children.
    order = np.lexsort((-sides, seqs))
    stamps = np.concatenate([left.timestamps, right.timestamps]).astype(np.int64)[order]
    if stamps.min() < 0 or stamps.max() >= _TIME_LIMIT:
        return None
    encoded = pa.chunked_array([_serialized_keys(left), _serialized_keys(right)], pa.large_binary()).combine_chunks().dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    has_value = np.concatenate([_has_value(left), _has_value(right)])
    left_paths, right_paths = walks(left), walks(right)
    paths = None
    if left_paths is not None or right_paths is not None:
        paths = (left_paths or [b""] * len(left)) + (right_paths or [b""] * len(right))
    return _Batch(
        side=sides[order], row=order.astype(np.int64), stamps=stamps, seqs=seqs[order], codes=codes[order],
        has_value=has_value[order], key_array=encoded.dictionary,
        key_objects=left.keys() + right.keys(), values=left.values() + right.values(), paths=paths,
    )


def _serialized_keys(flow: Flow) -> pa.Array:
    """The keys as :func:`deltastreams.sinks.serde.key_bytes` serializes them, as an Arrow array."""
    column = flow.table.column(KEY)
    if pat.is_string(column.type) or pat.is_large_string(column.type):
        return column.combine_chunks().cast(pa.large_binary())
    return pa.array(key_bytes(column), pa.large_binary())


def _has_value(flow: Flow) -> np.ndarray:
    if flow._values is None:  # values() would be the column's own nulls
        return np.asarray(flow.table.column(VALUE).is_valid(), dtype=bool)
    return np.fromiter((v is not None for v in flow._values), dtype=bool, count=len(flow))


class _Pool:
    """The Python objects results are made of, referred to by index: the batch's keys, then its
    values, then None, then objects read from the stores."""

    def __init__(self, batch: _Batch) -> None:
        self.objects: list[Any] = [*batch.key_objects, *batch.values, None]
        self.KEYS = 0
        self.VALUES = len(batch.key_objects)
        self.NONE = 2 * len(batch.key_objects)
        self._pickled: list[tuple[int, list[bytes]]] = []

    def add_pickled(self, raws: list[bytes]) -> np.ndarray:
        """Indices for pickled objects, unpickled only when a result uses them."""
        first = len(self.objects)
        self.objects.extend([None] * len(raws))
        self._pickled.append((first, raws))
        return np.arange(first, first + len(raws), dtype=np.int64)

    def add(self, objects: list[Any]) -> int:
        self.objects.extend(objects)
        return len(self.objects) - len(objects)

    def take(self, indices: np.ndarray) -> list[Any]:
        for first, raws in self._pickled:
            used = indices[(indices >= first) & (indices < first + len(raws))]
            for at in np.unique(used).tolist():
                if raws[at - first] is not None:
                    self.objects[at] = pickle.loads(raws[at - first])
                    raws[at - first] = None
        return _pick(self.objects, indices)


class _Rows:
    """The results of the batch before the joiner runs: for each, the record whose processing
    forwards it (position), what it is, its place among those, and the pool indices of its key,
    the joiner's left and right arguments and the value a failure reports."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, kind: int, pos, rank, key, left, right, reported, stamps) -> None:
        if len(pos):
            self.parts.append((np.asarray(pos), np.full(len(pos), kind), np.asarray(rank), key, left, right, reported, stamps))

    def ordered(self) -> tuple[np.ndarray, ...]:
        if not self.parts:
            return tuple(np.zeros(0, dtype=np.int64) for _ in range(8))
        columns = [np.concatenate([p[i] for p in self.parts]).astype(np.int64) for i in range(8)]
        order = np.lexsort((columns[2], columns[1], columns[0]))
        return tuple(c[order] for c in columns)


def _waiting(batch, windows, outer_side, waiting, new_waiting, events, stream, min_time0, pool, rows) -> tuple[int | None, dict]:
    """The outer store's part: which waiting records go out when (added to ``rows``); returns
    minTime after the batch and the store's changed entries (None: gone)."""
    n = len(batch.stamps)
    code_of = dict(batch.code_of)
    keys = list(batch.keys)
    for _, _, key, _ in waiting:
        if key not in code_of:
            code_of[key] = len(keys)
            keys.append(key)
    new_pos = np.flatnonzero(new_waiting)
    item_pos = np.concatenate([np.full(len(waiting), -1), new_pos]).astype(np.int64)
    item_time = np.concatenate([np.asarray([w[0] for w in waiting], dtype=np.int64), batch.stamps[new_pos]])
    item_code = np.concatenate([np.asarray([code_of[w[2]] for w in waiting], dtype=np.int64), batch.codes[new_pos]])
    event_pos, event_time, event_code = events
    entry_ids = _group_ids(np.concatenate([item_time, event_time]), np.concatenate([item_code, event_code]))
    item_entry = entry_ids[: len(item_pos)]
    removed = removal_positions(item_entry, item_pos, entry_ids[len(item_pos) :], event_pos, n)

    lookback = windows.after_ms if outer_side == LEFT else windows.before_ms
    candidates = np.flatnonzero(batch.valid & (batch.stamps == stream))
    afters = np.where(batch.side[candidates] == LEFT, windows.after_ms, windows.before_ms)
    largest = waiting_max(candidates, item_pos, removed, item_time, n)
    scans, min_time = scan_positions(candidates, stream, afters, windows.grace_ms, lookback, item_pos, item_time, largest, min_time0)
    emitted = emitted_at(scans, stream, item_pos, item_time, removed, lookback + windows.grace_ms)

    rank = np.empty(len(keys), dtype=np.int64)
    every_key = pa.concat_arrays([batch.key_array, pa.array(keys[len(batch.keys) :], pa.large_binary())])
    rank[pc.sort_indices(every_key).to_numpy()] = np.arange(len(keys))
    out = np.flatnonzero(emitted >= 0)
    # Kafka's store order (time, side, key), then each entry's list in the order it was put.
    out = out[np.lexsort((item_pos[out], rank[item_code[out]], item_time[out], emitted[out]))]
    old_items = out[item_pos[out] < 0].tolist()
    lists = [pickle.loads(waiting[i][3]) for i in old_items]
    counts = np.ones(len(out), dtype=np.int64)
    counts[item_pos[out] < 0] = [len(items) for items in lists]
    expanded = np.repeat(out, counts)
    key_at = np.where(item_pos[expanded] < 0, 0, pool.KEYS + batch.row[np.maximum(item_pos[expanded], 0)])
    value_at = np.where(item_pos[expanded] < 0, 0, pool.VALUES + batch.row[np.maximum(item_pos[expanded], 0)])
    if lists:
        old = np.flatnonzero(item_pos[expanded] < 0)
        flat = [pair for items in lists for pair in items]
        first = pool.add([k for k, _ in flat] + [v for _, v in flat])
        key_at[old] = first + np.arange(len(flat))
        value_at[old] = first + len(flat) + np.arange(len(flat))
    at = emitted[expanded]
    own = batch.side[at] == outer_side
    rows.add(
        _SCAN, at, np.arange(len(at)), key_at,
        value_at if outer_side == LEFT else np.full(len(at), pool.NONE), np.full(len(at), pool.NONE) if outer_side == LEFT else value_at,
        np.where(own, value_at, pool.NONE), item_time[expanded],
    )

    # The store's changes: entries with a waiting record put in the batch and still there, and
    # committed entries gone.
    gone = (emitted >= 0) | (removed < n)
    fresh = item_pos >= 0
    changed = np.zeros(int(item_entry.max(initial=-1)) + 1, dtype=bool)
    changed[item_entry[fresh & ~gone]] = True
    changed[item_entry[~fresh & gone]] = True
    chosen = np.flatnonzero(changed[item_entry])
    chosen = chosen[np.lexsort((item_pos[chosen], item_entry[chosen]))]
    changes: dict[bytes, list | None] = {}
    for i, p, time, code, lost in zip(chosen.tolist(), item_pos[chosen].tolist(), item_time[chosen].tolist(), item_code[chosen].tolist(), gone[chosen].tolist(), strict=True):
        items = changes.setdefault(OuterJoinStore.entry_key(time, outer_side, keys[code]), [])
        if not lost:
            if p < 0:
                items.extend(pickle.loads(waiting[i][3]))
            else:
                row = int(batch.row[p])
                items.append((batch.key_objects[row], batch.values[row]))
    for entry_key, items in changes.items():
        if not items:
            changes[entry_key] = None
    return min_time, changes


def _group_ids(times: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """One id per distinct (time, code) pair."""
    if not len(times):
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((codes, times))
    new = np.r_[True, (np.diff(times[order]) != 0) | (np.diff(codes[order]) != 0)]
    ids = np.empty(len(times), dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids


def _call_joiner(rows: _Rows, pool: _Pool, batch: _Batch, joiner, node_names: dict[int, str], context: ProcessContext) -> dict[int, SideOutput]:
    """The joiner on every result, in Kafka's order; a failure sends the record that forwarded
    the result to the dead letters (reported with its own value, None if the result is another
    record's) and drops the result."""
    pos, _, _, key_at, left_at, right_at, reported_at, stamps = rows.ordered()
    keys, lefts, rights = pool.take(key_at), pool.take(left_at), pool.take(right_at)
    # One iterator per argument, shared by the calls: after a failure, map resumes with the next
    # result (it took the failed one's arguments already), and extend keeps what came before.
    arguments = [iter(a) for a in ((keys, lefts, rights) if joiner.takes_key else (lefts, rights))]
    joined: list[Any] = []
    ok = np.ones(len(pos), dtype=bool)
    while True:
        try:
            joined.extend(map(joiner.fn, *arguments))
            break
        except Exception as e:  # noqa: BLE001 - any user error goes to the dead letters
            i = len(joined)
            p = int(pos[i])
            side = int(batch.side[p])
            reported = pool.objects[int(reported_at[i])]
            context.bad.reject(int(batch.seqs[p]), node_names[side], f"{joiner.describe()} raised {type(e).__name__}: {e}", keys[i], reported, error=e)
            joined.append(None)
            ok[i] = False
    sides = batch.side[pos]
    outputs = {}
    for side in (LEFT, RIGHT):
        chosen = np.flatnonzero(ok & (sides == side))
        outputs[side] = SideOutput(
            seqs=batch.seqs[pos[chosen]],
            walks=None if batch.paths is None else _pick(batch.paths, batch.row[pos[chosen]]),
            keys=keys if len(chosen) == len(keys) else _pick(keys, chosen),  # (chosen ascends)
            values=joined if len(chosen) == len(joined) else _pick(joined, chosen),
            stamps=stamps[chosen],
        )
    return outputs


def _pick(objects: list[Any], indices: np.ndarray) -> list[Any]:
    if len(indices) < 2:
        return [objects[i] for i in indices.tolist()]
    return list(operator.itemgetter(*indices.tolist())(objects))
