"""Grouped aggregations (count, reduce, aggregate), windowed or not, with Kafka's revisions.

Every update of an aggregate is a revision, carrying ``timestamp = max(record timestamp,
previous aggregate timestamp)``. With caching on, only the last revision per window (or key) of a
commit is emitted, in the order the windows were last updated (the order Kafka's cache flushes);
with caching off, one revision per input record (and window), in input order.

Null semantics are Kafka's: a record with a null value is skipped and counted as dropped (it
neither counts nor reaches a reducer or aggregator); an aggregate that becomes null is deleted
from the store (a tombstone in the changelog), so the key's next record starts afresh (from its
value for ``reduce``, from ``initializer()`` for ``aggregate``). A record with a null key goes to
the dead-letter topic (Kafka drops it; see docs/differences-from-kafka.md).

``count`` is vectorised end to end. ``reduce`` and ``aggregate`` call the user's function once per
record in offset order, which their contract requires; everything around the call (windows,
lateness, grouping, store reads and writes) stays vectorised.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.sinks.serde import key_bytes, key_bytes_of, key_from_bytes
from deltastreams.state import NO_STREAM_TIME, ReadOnlyKeyValueStore, ReadOnlyWindowStore, TimeKeyedStore
from deltastreams.state.window import time_key
from deltastreams.streams._internal.processing.flow import BadRecords, Flow, concat_flows, flow_schema, infer_array
from deltastreams.streams._internal.processing.idle import remember_key_type, remembered_key_type
from deltastreams.streams._internal.processing.operator import IDLE_BLOCKED, BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.table import BatchChanges
from deltastreams.streams._internal.processing.walk import RANK_SIZE, Turn, carry_walk, fork_entry, turns
from deltastreams.streams._internal.processing.windowing import (
    InputStreamTimes,
    assign_windows,
    last_emitted_close,
    latest_window_start,
    remember_emitted_close,
    remember_latest_window_start,
    segmented_running_max,
)
from deltastreams.topology.nodes import AggregateNode, AggregationKind
from deltastreams.topology.records import KEY, VALUE

_COUNT = struct.Struct(">qq")
_FAR_FUTURE = 2**62


def _windows_for(t: int, windows) -> set[int]:
    """Starts of the windows containing ``t`` (Kafka's TimeWindows.windowsFor)."""
    if t < 0:
        return set()
    first = max(0, t - windows.size_ms + windows.advance_ms) // windows.advance_ms * windows.advance_ms
    return set(range(first, t + 1, windows.advance_ms))


@dataclass(frozen=True)
class _Pairs:
    """Kept (record, window) pairs grouped by (key, window)."""

    record: np.ndarray
    start: np.ndarray
    end: np.ndarray
    group: np.ndarray
    group_first: np.ndarray
    """Index of the first pair of each group."""
    store_keys: list[Any]


def fold_functions(aggregation) -> tuple[Any, Any]:
    """``(initializer(), aggregator(key, value, aggregate))`` of an aggregation, for operators
    that fold record by record: a count from 0, Kafka's reduce from a null aggregate (the first
    value), an aggregate as the user gave it."""
    if aggregation.kind is AggregationKind.COUNT:
        return (lambda: 0), (lambda key, value, agg: agg + 1)
    if aggregation.kind is AggregationKind.REDUCE:
        reducer = aggregation.function
        return (lambda: None), (lambda key, value, agg: value if agg is None else reducer(agg, value))
    return aggregation.initializer, aggregation.function


INPUT = "_input"
"""Column of a cogroup's records: the index of the input each came from (see
:mod:`deltastreams.streams._internal.processing.cogroup`)."""


def record_aggregators(flow: Flow, aggregation, aggregator) -> list[Any]:
    """The aggregator folding each record of ``flow``: ``aggregator`` for all, or, for a cogroup,
    the aggregator of the input the record came from (Kafka folds each cogrouped stream with its
    own aggregator into the one store)."""
    if not aggregation.by_input:
        return [aggregator] * len(flow)
    return [aggregation.by_input[i] for i in flow.column(INPUT)]


def aggregatable(flow: Flow, node: str, context: ProcessContext) -> Flow:
    """The records an aggregation folds: a null key goes to the dead letters (Kafka drops it), a
    null value is skipped and counted as dropped (as Kafka does)."""
    keys = flow.table.column(KEY)
    if keys.null_count:
        null = np.asarray(keys.is_null())
        seqs, values = flow.seqs, flow.values()
        for i in np.flatnonzero(null):
            context.bad.reject(seqs[i], node, "null key: aggregations group by key", None, values[i])
        flow = flow.filter(~null)
    null_values = flow.table.column(VALUE).null_count
    if null_values:
        context.drop(null_values)
        flow = flow.filter(np.asarray(flow.table.column(VALUE).is_valid()))
    return flow


class AggregateOperator(Operator, node=AggregateNode):
    """Runs one :class:`AggregateNode` for one task against its store."""

    node: AggregateNode

    def __init__(self, node: AggregateNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.windows = node.windows
        self.caching = build.caching
        self.kv = build.stores[node.store]
        self.window_store = TimeKeyedStore(self.kv) if node.windows is not None else None
        self.table_changes = build.table_changes
        self.rank = build.ranks.get(node.name, 0)

    @property
    def windowed(self) -> bool:
        return self.windows is not None

    def store_view(self) -> ReadOnlyKeyValueStore | ReadOnlyWindowStore:
        return _WindowView(self) if self.windowed else _KeyValueView(self)

    # -- store values -------------------------------------------------------------------------

    def _decode(self, raw: bytes | None) -> tuple[Any, int] | None:
        if raw is None:
            return None
        if self.node.aggregation.kind is AggregationKind.COUNT:
            return _COUNT.unpack(raw)
        return pickle.loads(raw)

    def _encode(self, value: Any, timestamp: int) -> bytes:
        if self.node.aggregation.kind is AggregationKind.COUNT:
            return _COUNT.pack(int(value), int(timestamp))
        return pickle.dumps((value, int(timestamp)), protocol=5)

    def _put(self, store_key: Any, value: bytes | None) -> None:
        """Store an encoded aggregate; None deletes it (Kafka's put of a null aggregate)."""
        if self.window_store is not None:
            start, kb = store_key
            if value is None:
                self.window_store.delete(start, kb)
            else:
                self.window_store.put(start, kb, value)
        elif value is None:
            self.kv.delete(store_key)
        else:
            self.kv.put(store_key, value)

    def _get_many(self, store_keys: list[Any]) -> list[bytes | None]:
        if self.window_store is not None:
            return self.window_store.get_many(store_keys)
        return self.kv.get_many(store_keys)

    # -- processing ---------------------------------------------------------------------------

    def _changes(self) -> BatchChanges | None:
        """Where to log this batch's updates, record by record, if something reads the table by
        key (a join, a re-grouping; see :mod:`deltastreams.streams._internal.processing.table`)."""
        changes = self.table_changes.get(self.node.store)
        if changes is not None:
            changes.clear()
        return changes

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        changes = self._changes()
        flow = aggregatable(flow, self.name, context)
        if len(flow) == 0:
            value_type = pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else pa.null()
            return Flow.empty(flow.key_type, value_type, self.windowed)

        timestamps = flow.timestamps
        cogroup = INPUT in flow.table.column_names
        if self.window_store is not None:
            lateness = InputStreamTimes(self.kv).running(flow.column(INPUT), timestamps) if cogroup else None
            assignment = assign_windows(timestamps, self.windows, self.window_store.stream_time, lateness)
            record, start, end, late = assignment.record, assignment.start, assignment.end, assignment.late
        else:
            record = np.arange(len(flow))
            start = end = np.zeros(len(flow), dtype=np.int64)
            late = np.zeros(len(flow), dtype=bool)

        encoded = pc.dictionary_encode(flow.table.column(KEY).combine_chunks())
        distinct_keys = encoded.dictionary
        key_index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        distinct_bytes = key_bytes(distinct_keys)

        kept = ~late
        pairs = self._group(record[kept], start[kept], end[kept], key_index, distinct_bytes)
        stored = self._get_many(pairs.store_keys)
        previous = [self._decode(raw) for raw in stored]
        unreadable = self._past_retention(pairs, len(flow)) if cogroup and self.windowed else None
        if changes is not None and self.windowed and not cogroup and len(pairs.start):
            # Read by key (joined, re-grouped): keep windows as long as Kafka's window store
            # returns them, ``size + grace`` behind the latest window start written (see _advance).
            latest = latest_window_start(self.kv)
            remember_latest_window_start(self.kv, int(pairs.start.max()) if latest is None else max(latest, int(pairs.start.max())))

        if self.node.aggregation.kind is AggregationKind.COUNT:
            revisions = self._count(flow, pairs, previous, key_index, distinct_keys, _Log(changes, stored, pairs, flow, self.rank))
        else:
            revisions = self._fold(flow, pairs, previous, key_index, distinct_keys, context.bad, _Log(changes, stored, pairs, flow, self.rank), unreadable)

        dropped = int(late.sum())
        if dropped:
            # (record, window) pairs, as Kafka's sensor counts; the late-records topic gets the
            # records too late for every window they belong to.
            context.drop(dropped)
            updates = np.bincount(record[kept], minlength=len(flow))
            windows_per_record = np.bincount(record, minlength=len(flow))
            context.emit_late(flow.filter((windows_per_record > 0) & (updates == 0)))
        if self.node.emit_final:
            remember_key_type(self.kv, distinct_keys.type)
            revisions = self._closed_windows(flow.seqs, assignment.stream_time, distinct_keys.type, flow.table)
        if self.window_store is not None:
            self._advance(int(assignment.final_stream_time))
        return revisions

    def _past_retention(self, pairs: _Pairs, records: int) -> np.ndarray:
        """Per (record, window) pair of a cogroup, whether Kafka's window store would read the
        window as absent: it reads nothing starting ``size + grace`` (its retention) or more
        before the latest window start written to it. A record late for none of its input's
        windows can meet such a window when another input ran ahead; Kafka then aggregates it
        from the initializer (its cache aside: docs/differences-from-kafka.md)."""
        latest = latest_window_start(self.kv)
        latest = NO_STREAM_TIME if latest is None else latest
        written = np.full(records, NO_STREAM_TIME, dtype=np.int64)  # window starts >= 0
        np.maximum.at(written, pairs.record, pairs.start)
        before = np.maximum.accumulate(np.r_[latest, written[:-1]]) if records else written
        if len(pairs.start):
            remember_latest_window_start(self.kv, max(latest, int(pairs.start.max())))
        return pairs.start <= before[pairs.record] - self.windows.size_ms - self.windows.grace_ms
    # -- emit on window close ---------------------------------------------------------------------

    def _closed_windows(self, seqs: np.ndarray, stream_times: np.ndarray, key_type: pa.DataType, records: pa.Table | None = None) -> Flow:
        """Kafka's emit-final (KStreamWindowAggregate with ON_WINDOW_CLOSE): after each record,
        if the close time (stream time - grace) moved past the last emitted one and a window
        closed since, forward the windows starting in the newly closed range, in the order
        Kafka's time-ordered window store (the one it uses for emit-final) iterates them: by
        start, then key."""
        w = self.windows
        last = last_emitted_close(self.kv)
        events: list[tuple[int, int, int]] = []  # (record, lowest start, highest start)
        for i, st in enumerate(stream_times):
            close = int(st) - w.grace_ms
            if last is not None and last >= close:
                continue
            upper = close - w.size_ms
            if upper < 0:
                continue
            lower = 0 if last is None else max(0, last - w.size_ms) + 1
            if last is not None and _windows_for(upper, w) == _windows_for(lower - 1, w):
                continue  # no window closed since the last emission
            events.append((i, lower, upper))
            last = close
        remember_emitted_close(self.kv, last)
        rows, starts, keys, values, stamps = [], [], [], [], []
        stored = list(self.window_store.up_to(events[-1][2])) if events else []
        for i, lower, upper in events:
            closed = sorted(((start, kb, raw) for start, kb, raw in stored if lower <= start <= upper), key=lambda e: (e[0], e[1]))
            for start, kb, raw in closed:
                aggregate, ts = self._decode(raw)
                rows.append(i), starts.append(start), keys.append(key_from_bytes(kb, key_type)), values.append(aggregate), stamps.append(ts)
        value_type = pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else None
        array, misfits = infer_array(values, value_type)
        if misfits:
            raise TypeError(f"{self.name}: aggregate values of different types cannot form one table: {values[misfits[0]]!r}")
        starts_array = pa.array(starts, pa.int64())
        table = pa.table(
            [pa.array(seqs[np.asarray(rows, dtype=np.int64)], pa.int64()), pa.array(stamps, pa.int64()), starts_array,
             pc.add(starts_array, w.size_ms), pa.array(keys, key_type), array],
            schema=flow_schema(key_type, array.type, True),
        )
        return Flow(table if records is None else carry_walk(table, records, rows), True)

    def _group(self, record, start, end, key_index, distinct_bytes) -> _Pairs:
        if len(record) == 0:
            empty = np.zeros(0, dtype=np.int64)
            return _Pairs(record, start, end, empty, empty, [])
        pair_keys = key_index[record]
        step = self.windows.advance_ms if self.windows is not None else 1
        slot = (start - start.min()) // step
        combined = pair_keys * (int(slot.max()) + 1) + slot
        _, group_first, group = np.unique(combined, return_index=True, return_inverse=True)
        group = group.reshape(-1)
        if self.window_store is not None:
            store_keys = [(int(start[i]), distinct_bytes[pair_keys[i]]) for i in group_first]
        else:
            store_keys = [distinct_bytes[pair_keys[i]] for i in group_first]
        return _Pairs(record, start, end, group, group_first, store_keys)

    def _revisions(self, flow, pairs, rows, values: pa.Array, timestamps, key_index, distinct_keys) -> Flow:
        """A flow of revisions; ``rows`` index pairs."""
        pair_rows = pairs.record[rows]
        columns = [pa.array(flow.seqs[pair_rows], pa.int64()), pa.array(timestamps, pa.int64())]
        if self.windowed:
            columns += [pa.array(pairs.start[rows], pa.int64()), pa.array(pairs.end[rows], pa.int64())]
        keys = distinct_keys.take(pa.array(key_index[pair_rows]))
        table = pa.table(columns + [keys, values], schema=flow_schema(distinct_keys.type, values.type, self.windowed))
        return Flow(carry_walk(table, flow.table, pair_rows), self.windowed)

    def _count(self, flow, pairs: _Pairs, previous, key_index, distinct_keys, log: _Log) -> Flow:
        groups = len(pairs.group_first)
        if groups == 0:
            return Flow.empty(distinct_keys.type, pa.int64(), self.windowed)
        prev_count = np.fromiter((p[0] if p else 0 for p in previous), dtype=np.int64, count=groups)
        prev_ts = np.fromiter((p[1] if p else np.iinfo(np.int64).min for p in previous), dtype=np.int64, count=groups)
        pair_ts = flow.timestamps[pairs.record]
        batch_count = np.bincount(pairs.group, minlength=groups)
        batch_max = np.full(groups, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(batch_max, pairs.group, pair_ts)
        new_count = prev_count + batch_count
        new_ts = np.maximum(prev_ts, batch_max)
        for g in range(groups):
            self._put(pairs.store_keys[g], _COUNT.pack(int(new_count[g]), int(new_ts[g])))

        if self.caching and log.changes is None:
            return self._last_counts(flow, pairs, new_count, new_ts, key_index, distinct_keys)

        order = np.argsort(pairs.group, kind="stable")
        sorted_groups = pairs.group[order]
        boundaries = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
        group_offset = np.zeros(groups, dtype=np.int64)
        group_offset[sorted_groups[boundaries]] = boundaries
        running_count = np.empty(len(order), dtype=np.int64)
        running_count[order] = np.arange(len(order)) - group_offset[sorted_groups] + 1
        running_ts = np.empty(len(order), dtype=np.int64)
        running_ts[order] = segmented_running_max(pair_ts[order], sorted_groups)
        counts = prev_count[pairs.group] + running_count
        stamps = np.maximum(running_ts, prev_ts[pairs.group])
        if log.changes is not None:
            for j in range(len(pairs.group)):
                log.record(j, _COUNT.pack(int(counts[j]), int(stamps[j])))
        if self.caching:
            return self._last_counts(flow, pairs, new_count, new_ts, key_index, distinct_keys)
        rows = np.arange(len(pairs.group))
        return self._revisions(flow, pairs, rows, pa.array(counts), stamps, key_index, distinct_keys)

    def _last_counts(self, flow, pairs: _Pairs, new_count, new_ts, key_index, distinct_keys) -> Flow:
        """Kafka's cache: the last revision per group, in the order groups were last updated."""
        last = np.zeros(len(pairs.group_first), dtype=np.int64)
        np.maximum.at(last, pairs.group, np.arange(len(pairs.group)))
        order = np.argsort(last, kind="stable")
        return self._revisions(flow, pairs, last[order], pa.array(new_count[order]), new_ts[order], key_index, distinct_keys)

    def _fold(self, flow, pairs: _Pairs, previous, key_index, distinct_keys, bad: BadRecords, log: _Log, unreadable: np.ndarray | None = None) -> Flow:
        """``unreadable``: per pair, whether the window's aggregate reads as absent."""
        aggregation = self.node.aggregation
        reduce = aggregation.kind is AggregationKind.REDUCE
        keys_py = distinct_keys.to_pylist()
        values = flow.values()
        timestamps = flow.timestamps
        seqs = flow.seqs
        aggregators = record_aggregators(flow, aggregation, aggregation.function)
        state: list[Any] = [p[0] if p else None for p in previous]
        stamps: list[int] = [p[1] if p else np.iinfo(np.int64).min for p in previous]
        present = [p is not None and p[0] is not None for p in previous]
        touched_at = np.full(len(previous), -1, dtype=np.int64)
        emitted_rows: list[int] = []
        emitted_values: list[Any] = []
        emitted_ts: list[int] = []
        rejected: set[int] = set()
        for j, (r, g) in enumerate(zip(pairs.record, pairs.group, strict=True)):
            if r in rejected:
                continue
            key, value = keys_py[key_index[r]], values[r]
            if unreadable is not None and unreadable[j] and not (self.caching and touched_at[g] >= 0 and seqs[pairs.record[touched_at[g]]] == seqs[r]):
                # (with caching, a window this input record wrote is still in Kafka's cache)
                present[g] = False
            try:
                if reduce:
                    new = value if not present[g] else aggregation.function(state[g], value)
                else:
                    current = state[g] if present[g] else aggregation.initializer()
                    new = aggregators[r](key, value, current)
            except Exception as e:  # noqa: BLE001 - a failing record is rejected, the batch goes on
                rejected.add(r)
                function = aggregation.function if reduce else aggregators[r]
                bad.reject(seqs[r], self.name, f"{getattr(function, '__qualname__', function)} raised {type(e).__name__}: {e}", key, value, error=e)
                continue
            # A null aggregate is no aggregate (Kafka deletes it): the next record starts afresh,
            # and the revision carries this record's timestamp.
            stamps[g] = max(stamps[g], int(timestamps[r])) if present[g] else int(timestamps[r])
            state[g], present[g] = new, new is not None
            touched_at[g] = j
            if log.changes is not None:
                log.record(j, None if new is None else self._encode(new, stamps[g]))
            if not self.caching:
                emitted_rows.append(j)
                emitted_values.append(new)
                emitted_ts.append(stamps[g])
        for g in np.flatnonzero(touched_at >= 0):
            self._put(pairs.store_keys[g], None if state[g] is None else self._encode(state[g], stamps[g]))
        if self.caching:
            order = [int(g) for g in np.argsort(touched_at, kind="stable") if touched_at[g] >= 0]
            emitted_rows = [int(touched_at[g]) for g in order]
            emitted_values = [state[g] for g in order]
            emitted_ts = [stamps[g] for g in order]
        array, misfits = infer_array(emitted_values, None)
        if misfits:
            raise TypeError(f"{self.name}: aggregate values of different types cannot form one table: {emitted_values[misfits[0]]!r}")
        return self._revisions(flow, pairs, np.asarray(emitted_rows, dtype=np.int64), array, np.asarray(emitted_ts, dtype=np.int64), key_index, distinct_keys)

    def _advance(self, stream_time: int) -> None:
        """Persist stream time; purge windows closed for good (``end + grace <= stream time``),
        which is also Kafka's retention of ``size + grace``. A cogroup's inputs each have their
        own stream time: there, and for a windowed table read by key (a join, a re-grouping),
        purge what no read can return any more: Kafka's window store returns a window until its
        start is ``size + grace`` behind the latest start written (see :meth:`_past_retention`)."""
        store = self.window_store
        if stream_time <= store.stream_time:
            return
        store.stream_time = stream_time
        latest = latest_window_start(self.kv)
        horizon = (stream_time if latest is None else latest) - self.windows.size_ms - self.windows.grace_ms
        store.take_up_to(horizon)

    # -- idle close (deltastreams.streams._internal.processing.idle) -----------------------------------------

    def next_close_ms(self) -> int | None:
        """Until the oldest window in the store closes (its end plus grace): closed windows are
        emitted (emit-final) and purged in the batch that closes them, so the oldest is open."""
        store = self.window_store
        if store is None or store.stream_time == NO_STREAM_TIME:
            return None
        retention = self.windows.size_ms + self.windows.grace_ms
        # (a cogroup keeps windows closed by the shared stream time that a lagging input may
        # still update: skip those)
        oldest = next((w for w in store.up_to(_FAR_FUTURE) if w[0] + retention > store.stream_time), None)
        if oldest is None:
            return None
        if self.node.emit_final and remembered_key_type(self.kv) is None:
            return IDLE_BLOCKED
        return oldest[0] + self.windows.size_ms + self.windows.grace_ms - store.stream_time

    def advance_idle(self, flow: Flow, by_ms: int, context: ProcessContext) -> Flow:
        out = self.process(flow, context)
        store = self.window_store
        if store is None or store.stream_time == NO_STREAM_TIME:
            return out
        target = store.stream_time + by_ms
        key_type = remembered_key_type(self.kv)
        if self.node.emit_final and key_type is not None:  # (unknown: next_close_ms blocks idle runs while windows are open)
            # As after a record at ``target``: the windows it closes, once.
            out = concat_flows([out, self._closed_windows(np.zeros(1, dtype=np.int64), np.array([target]), key_type)])
        self._advance(target)
        context.advanced_to(target)
        return out


class _Log:
    """Records an aggregation's updates in its table's batch changes, if anything reads them."""

    def __init__(self, changes: BatchChanges | None, stored: list[bytes | None], pairs: _Pairs, flow: Flow, rank: int) -> None:
        self.changes = changes
        self.stored = stored
        self.pairs = pairs
        self.turns: list[Turn] = turns(flow, rank) if changes is not None else []
        self.pair_turns: list[Turn] | None = None
        if changes is not None and pairs.store_keys and isinstance(pairs.store_keys[0], tuple):
            self.pair_turns = _window_turns(flow, pairs, rank)

    def record(self, pair: int, value: bytes | None) -> None:
        """The update of ``pair``'s group by its record, at that record's turn (a window's: at
        the turn of the revision it forwards)."""
        group = self.pairs.group[pair]
        key = self.pairs.store_keys[group]
        if self.pair_turns is not None:  # a window's (start, key): its raw key in the store, as read by key
            self.changes.record(time_key(*key), self.stored[group], self.pair_turns[pair], value)
            return
        self.changes.record(key, self.stored[group], self.turns[self.pairs.record[pair]], value)


def _window_turns(flow: Flow, pairs: _Pairs, rank: int) -> list[Turn]:
    """Kafka's KStreamWindowAggregate puts one window, forwards its revision (which walks to the
    end), then puts the next window of the record. A record's revisions are forks of its walk
    (:func:`~deltastreams.streams._internal.processing.walk.number_forks`: entry ``(rank, index)``
    each, in window order), so each window's change is logged at its revision's turn at this
    operator: a read of the window's old value there sees the value before it, any later step
    (and later window's walk) the new one, an earlier window's walk the old one."""
    record = pairs.record
    per_record = np.bincount(record, minlength=len(flow)) if len(record) else np.zeros(len(flow), dtype=np.int64)
    first = np.r_[0, np.cumsum(per_record)[:-1]] if len(flow) else np.zeros(0, dtype=np.int64)
    base = turns(flow, rank)
    out: list[Turn] = []
    for j, r in enumerate(record.tolist()):
        seq, path = base[r]
        if per_record[r] > 1:
            path = path[: -RANK_SIZE] + fork_entry(rank, j - int(first[r])) + path[-RANK_SIZE:]
        out.append((seq, path))
    return out


class _KeyValueView:
    """Read-only access to a key-value aggregation's store (Kafka's ``getKeyValueStore``)."""

    def __init__(self, operator: AggregateOperator) -> None:
        self._operator = operator
        self.name = operator.node.store

    def get(self, key: Any) -> Any:
        """The aggregate of ``key``, or None."""
        raw = self._operator.kv.get(key_bytes_of(key, pa.array([key]).type))
        decoded = self._operator._decode(raw)
        return None if decoded is None else decoded[0]


class _WindowView:
    """Read-only access to a windowed aggregation's store (Kafka's ``getWindowStore``)."""

    def __init__(self, operator: AggregateOperator) -> None:
        self._operator = operator
        self.name = operator.node.store

    def fetch(self, key: Any, window_start: int) -> Any:
        """The aggregate of ``key`` in the window starting at ``window_start``, or None."""
        raw = self._operator.window_store.get(window_start, key_bytes_of(key, pa.array([key]).type))
        decoded = self._operator._decode(raw)
        return None if decoded is None else decoded[0]
