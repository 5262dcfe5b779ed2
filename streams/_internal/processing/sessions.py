"""Session-windowed aggregations: Kafka's KStreamSessionWindowAggregate.

For each record, in order: the key's sessions within ``gap`` of it (``end >= t - gap`` and
``start <= t + gap``) are merged with it into one session (their aggregates combined by the
merger, from the initializer); unless that session ended before the close time (``stream time -
grace - gap``: the record is too late, skipped and counted as dropped), the merged-away sessions
are removed and forwarded as deletes (oldest first), and the new session's aggregate is stored
and forwarded. Every result is timed at its session's end. Sessions are inherently sequential per
key, so this runs record by record; the store is read once per key and batch.

With caching, Kafka forwards the last revision per session at commit, and nothing for a session
created and merged away within the commit; the same here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.sinks.serde import key_bytes, key_bytes_of, key_from_bytes
from deltastreams.state.session_store import NO_TIME, SessionStore
from deltastreams.streams._internal.processing.aggregate import INPUT, aggregatable, fold_functions, record_aggregators
from deltastreams.streams._internal.processing.flow import SEQ, Flow, concat_flows, flow_schema, infer_array, own_headers
from deltastreams.streams._internal.processing.idle import advance_windows_store, remember_key_type, remembered_key_type
from deltastreams.streams._internal.processing.operator import IDLE_BLOCKED, BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.walk import carry_walk
from deltastreams.streams._internal.processing.windowing import InputStreamTimes, last_emitted_close, remember_emitted_close
from deltastreams.topology.nodes import AggregationKind, SessionAggregateNode
from deltastreams.topology.records import HEADERS, KEY, Windowed


class _Forwarded:
    def __init__(self) -> None:
        self.rows: list[int] = []  # the input record each result comes from
        self.windows: list[tuple[int, int]] = []
        self.values: list[Any] = []
        self.keys: list[Any] | None = None
        """Set when results carry their own keys (final results of other keys' sessions)."""

    def add(self, row: int, start: int, end: int, value: Any, *, key: Any = None) -> None:
        self.rows.append(row)
        self.windows.append((start, end))
        self.values.append(value)
        if key is not None:
            self.keys = (self.keys or []) + [key]


class SessionAggregateOperator(Operator, node=SessionAggregateNode):
    node: SessionAggregateNode

    def __init__(self, node: SessionAggregateNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.gap, self.grace = node.sessions.gap_ms, node.sessions.grace_ms
        self.store = SessionStore(build.stores[node.store], self.gap + self.grace, caching=build.caching)
        self.caching = build.caching
        self.initializer, self.aggregator = fold_functions(node.aggregation)
        self.merger = node.merger
        if node.aggregation.kind is AggregationKind.REDUCE:  # Kafka merges reduced sessions with the reducer
            reducer = node.aggregation.function
            self.merger = lambda key, agg, other: other if agg is None else reducer(agg, other)

    def store_view(self) -> _SessionView:
        return _SessionView(self)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        store = self.store
        store.begin_batch()
        flow = aggregatable(flow, self.name, context)
        self._aggregators = record_aggregators(flow, self.node.aggregation, self.aggregator)
        out, final = _Forwarded(), _Forwarded()
        self.last_emit = last_emitted_close(store.store)
        self._key_type = flow.key_type
        existed: set[tuple[bytes, int, int]] = set()  # sessions read from the store (for caching)
        raw_keys = key_bytes(flow.table.column(KEY)) if len(flow) else []
        store.preload(dict.fromkeys(raw_keys))
        if self.caching:
            existed = {(kb, s, e) for kb in dict.fromkeys(raw_keys) for s, e, _ in store.fetch(kb)}
        keys, values, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        inputs = flow.column(INPUT) if INPUT in flow.table.column_names else None  # a cogroup's
        input_times = InputStreamTimes(store.store)
        for i, (key, kb, value) in enumerate(zip(keys, raw_keys, values, strict=True)):
            ts = int(stamps[i])
            store.begin_record(int(seqs[i]))
            store.stream_time = max(store.stream_time, ts)
            own_time = store.stream_time if inputs is None else input_times.observe(int(inputs[i]), ts)
            close = own_time - self.grace - self.gap
            self._aggregate_record(i, key, kb, value, ts, close, int(seqs[i]), out, context)
            if self.node.emit_final:
                self._emit_closed(i, close, final)
        if self.node.emit_final:
            remember_key_type(store.store, flow.key_type)
            remember_emitted_close(store.store, self.last_emit)
            store.end_batch(keep_from=self.last_emit if self.last_emit is not None else 0)  # keep what is still to emit
            return self._flow(flow, final, context)
        store.end_batch()
        if self.caching:
            out = _last_per_session(out, raw_keys, existed)
        return self._flow(flow, out, context)

    def _aggregate_record(self, i: int, key: Any, kb: bytes, value: Any, ts: int, close: int, seq: int, out: _Forwarded, context: ProcessContext) -> None:
        store = self.store
        start, end = ts, ts
        try:
            aggregate = self.initializer()
            merged = store.find_sessions(kb, ts - self.gap, ts + self.gap)
            for s, e, other in merged:
                aggregate = self.merger(key, aggregate, other)
                start, end = min(start, s), max(end, e)
            if end < close:
                context.drop(1)  # too late: its session has closed
                return
            aggregate = self._aggregators[i](key, value, aggregate)
        except Exception as e:  # noqa: BLE001 - a failing function rejects its record
            context.bad.reject(seq, self.name, f"{type(e).__name__}: {e}", key, value, error=e)
            return
        if (start, end) != (ts, ts):
            for s, e, _ in merged:
                store.remove(kb, s, e)
                out.add(i, s, e, None)
        store.put(kb, start, end, aggregate)
        out.add(i, start, end, aggregate)

    def _emit_closed(self, row: int, close: int, final: _Forwarded) -> None:
        """Kafka's emit-final for sessions: once the close time (stream time - grace - gap) has
        moved past the last emitted one, every session ending before it and not yet emitted."""
        last = self.last_emit
        if last is not None and last >= close:
            return
        upper = close - 1
        if upper < 0:
            return
        lower = max(0, -1 if last is None else last)
        if upper < lower:
            return
        for kb, start, end, aggregate in self.store.ending_between(lower, upper):
            final.add(row, start, end, aggregate, key=key_from_bytes(kb, self._key_type))
        self.last_emit = close

    def _flow(self, flow: Flow, out: _Forwarded, context: ProcessContext) -> Flow:
        rows = np.asarray(out.rows, dtype=np.int64)
        source = flow.take(rows)
        array, misfits = infer_array(out.values, pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else None)
        if misfits:
            raise TypeError(f"{self.name}: aggregate values of different types cannot form one table: {out.values[misfits[0]]!r}")
        starts = pa.array([w[0] for w in out.windows], pa.int64())
        ends = pa.array([w[1] for w in out.windows], pa.int64())
        key_column = source.table.column(KEY) if out.keys is None else pa.array(out.keys, source.key_type)
        table = pa.table(
            [source.table.column(SEQ), ends, starts, ends, key_column, array],
            schema=flow_schema(source.key_type, array.type, True),
        )
        if not self.caching and not self.node.emit_final:
            # Kafka forwards a session's update as a new record (no headers); its cache, and its
            # final results, forward the current record's context (inherited here by _seq).
            headers = own_headers([()] * len(table), context.input_headers() if context.input_headers is not None else None)
            if headers is not None:
                table = table.append_column(HEADERS, headers)
        return Flow(carry_walk(table, source.table), True, None, out.values)

    # -- idle close (deltastreams.streams._internal.processing.idle) -----------------------------------------

    def next_close_ms(self) -> int | None:
        """Until the session ending first among those still open closes (stream time passes its
        end plus gap plus grace)."""
        store = self.store
        store.begin_batch()
        if store.stream_time == NO_TIME:
            return None
        first_end = store.first_end_from(store.stream_time - self.grace - self.gap)
        if first_end is None:
            return None
        if self.node.emit_final and remembered_key_type(store.store) is None:
            return IDLE_BLOCKED
        return first_end + self.gap + self.grace + 1 - store.stream_time

    def advance_idle(self, flow: Flow, by_ms: int, context: ProcessContext) -> Flow:
        out = self.process(flow, context)
        store = self.store
        key_type = advance_windows_store(store, by_ms, context, self.node.emit_final)
        if key_type is None:
            return out
        self.last_emit = last_emitted_close(store.store)
        self._key_type = key_type
        final = _Forwarded()
        self._emit_closed(0, store.stream_time - self.grace - self.gap, final)  # as after a record at the new stream time
        remember_emitted_close(store.store, self.last_emit)
        store.end_batch(keep_from=self.last_emit if self.last_emit is not None else 0)
        values, misfits = infer_array(final.values, pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else None)
        if misfits:
            raise TypeError(f"{self.name}: aggregate values of different types cannot form one table: {final.values[misfits[0]]!r}")
        ends = pa.array([w[1] for w in final.windows], pa.int64())
        table = pa.table(
            [pa.array(np.zeros(len(final.rows), dtype=np.int64)), ends, pa.array([w[0] for w in final.windows], pa.int64()), ends,
             pa.array(final.keys or [], key_type), values],
            schema=flow_schema(key_type, values.type, True),
        )
        return concat_flows([out, Flow(table, True)])


def _last_per_session(out: _Forwarded, raw_keys: list[bytes], existed: set[tuple[bytes, int, int]]) -> _Forwarded:
    """Kafka's cache: the last revision per session, in the order sessions were last updated;
    no delete for a session that did not exist before the commit."""
    last: dict[tuple[bytes, int, int], int] = {}
    for j, (row, (start, end)) in enumerate(zip(out.rows, out.windows, strict=True)):
        session = (raw_keys[row], start, end)
        last.pop(session, None)
        last[session] = j
    kept = _Forwarded()
    for session, j in last.items():
        if out.values[j] is None and session not in existed:
            continue
        kept.add(out.rows[j], *out.windows[j], out.values[j])
    return kept


class _SessionView:
    """Read-only access to a session store (Kafka's ``ReadOnlySessionStore``)."""

    def __init__(self, operator: SessionAggregateOperator) -> None:
        self._operator = operator
        self.name = operator.node.store

    def fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        """Every session of ``key``, in (end, start) order, with its aggregate."""
        store = self._operator.store
        store.begin_batch()
        return [(Windowed(key, s, e), agg) for s, e, agg in store.fetch(key_bytes_of(key, pa.array([key]).type))]
