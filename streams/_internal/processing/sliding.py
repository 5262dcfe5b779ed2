"""Sliding-window aggregations: Kafka's KStreamSlidingWindowAggregate, record by record.

Around each record at ``t`` live two windows: its left window ``[t - d, t]`` and its right window
``[t + 1, t + 1 + d]`` (both ends inclusive), each kept only while it holds records. A record
updates every existing window of its key that contains it, creates its left window (starting from
the aggregate of the records within ``d`` before it), the right window of the record before it if
that is missing, and its own right window if records follow within ``d``. Records earlier than
``d`` share the window ``[0, d]``. This follows Kafka's ``processReverse`` (the path its RocksDB
store takes) and ``processEarly`` step by step; a window whose end has passed stream time - grace
is not updated (the update is dropped and counted).

With ``EmitStrategy.on_window_close()`` updates are not forwarded; after each record that is not
dropped, once the close time (stream time - grace) has moved past the last emitted one, every
window ending before it and not emitted yet goes out, by (start, key) as Kafka's time-ordered
window store returns them. The last emitted close time is kept in the store, and windows not yet
emitted are kept past retention until they are (Kafka's retention cut could skip them when
stream time jumps by more than the difference; here they still go out).
"""

from __future__ import annotations

from typing import Any


import numpy as np
import pyarrow as pa

from deltastreams.sinks.serde import key_bytes, key_from_bytes
from deltastreams.state.session_store import NO_TIME, SessionStore
from deltastreams.streams._internal.processing.aggregate import INPUT, aggregatable, fold_functions, record_aggregators
from deltastreams.streams._internal.processing.flow import SEQ, Flow, concat_flows, flow_schema, infer_array
from deltastreams.streams._internal.processing.idle import advance_windows_store, remember_key_type, remembered_key_type
from deltastreams.streams._internal.processing.operator import IDLE_BLOCKED, BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.walk import carry_walk
from deltastreams.streams._internal.processing.windowing import InputStreamTimes, last_emitted_close, remember_emitted_close
from deltastreams.topology.nodes import AggregationKind, SlidingAggregateNode
from deltastreams.topology.records import KEY



class SlidingAggregateOperator(Operator, node=SlidingAggregateNode):
    node: SlidingAggregateNode

    def __init__(self, node: SlidingAggregateNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.d, self.grace = node.difference_ms, node.grace_ms
        # Windows live in a store keyed by (key, end, start), as sessions do; Kafka's retention.
        self.store = SessionStore(build.stores[node.store], 2 * self.d + self.grace, caching=build.caching)
        self.caching = build.caching
        self.initializer, self.aggregator = fold_functions(node.aggregation)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        store = self.store
        store.begin_batch()
        flow = aggregatable(flow, self.name, context)
        self._aggregators = record_aggregators(flow, self.node.aggregation, self.aggregator)
        raw_keys = key_bytes(flow.table.column(KEY)) if len(flow) else []
        store.preload(dict.fromkeys(raw_keys))
        self._out: list[tuple[int, int, Any, Any, int]] = []  # (row, start, key, aggregate, timestamp)
        self._final: list[tuple[int, int, Any, Any, int]] = []
        emit_final = self.node.emit_final
        if emit_final:
            self._last_emit = last_emitted_close(store.store)
            self._key_type = flow.key_type
        keys, values, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        inputs = flow.column(INPUT) if INPUT in flow.table.column_names else None  # a cogroup's
        input_times = InputStreamTimes(store.store)
        for i, (key, kb, value) in enumerate(zip(keys, raw_keys, values, strict=True)):
            self._row, self._key, self._kb, self._value, self._ts = i, key, kb, value, int(stamps[i])
            self._input = None if inputs is None else (input_times, int(inputs[i]))
            store.begin_record(int(seqs[i]))
            try:
                taken = self._record(context)
            except Exception as e:  # noqa: BLE001 - a failing aggregator rejects its record
                context.bad.reject(seqs[i], self.name, f"{type(e).__name__}: {e}", key, value, error=e)
                taken = True  # Kafka's processor would have gone on to emit
            if emit_final and taken:
                self._emit_closed()
        if emit_final:
            remember_key_type(store.store, flow.key_type)
            remember_emitted_close(store.store, self._last_emit)
            store.end_batch(keep_from=self._last_emit if self._last_emit is not None else 0)
            return self._flow(flow, self._final)
        store.end_batch()
        out = self._out
        if self.caching:  # Kafka's cache: the last revision per window, in the order last updated
            last: dict[tuple[bytes, int], int] = {}
            for j, (row, start, *_rest) in enumerate(out):
                last.pop((raw_keys[row], start), None)
                last[(raw_keys[row], start)] = j
            out = [out[j] for j in last.values()]
        return self._flow(flow, out)

    # -- Kafka's processor --------------------------------------------------------------------------

    def _record(self, context: ProcessContext) -> bool:
        """Aggregate the current record; False if it was too late for any window."""
        ts, d = self._ts, self.d
        store = self.store
        store.stream_time = max(store.stream_time, ts)
        own_time = store.stream_time if self._input is None else self._input[0].observe(self._input[1], ts)
        self._close = own_time - self.grace
        if ts + d < self._close:
            context.drop(1)  # even its right window has closed
            return False
        self._context = context
        if ts < d:
            self._early()
        else:
            self._reverse()
        return True

    def _emit_closed(self) -> None:
        """Kafka's maybeForwardFinalResult for sliding windows: windows starting from the last
        close time - difference up to this close time - difference - 1 (ends are inclusive)."""
        close, last = self._close, self._last_emit
        if last is not None and last >= close:
            return
        upper = close - self.d - 1
        if upper < 0:
            return
        lower = 0 if last is None else max(0, last - self.d)
        for kb, start, _end, (aggregate, timestamp) in self.store.ending_between(lower + self.d, upper + self.d):
            self._final.append((self._row, start, key_from_bytes(kb, self._key_type), aggregate, timestamp))
        self._last_emit = close

    def _windows(self, lowest_start: int, highest_start: int) -> list[tuple[int, Any, int]]:
        """``(start, aggregate, timestamp)`` of the key's windows starting in the range, by start."""
        found = self.store.find_sessions(self._kb, lowest_start + self.d, highest_start)
        return sorted(((start, agg[0], agg[1]) for start, _, agg in found if start >= lowest_start), key=lambda w: w[0])

    def _reverse(self) -> None:
        ts, d = self._ts, self.d
        starts: set[int] = set()
        left_agg = right_agg = None
        left_created = right_created = False
        previous_ts = None
        for start, agg, agg_ts in reversed(self._windows(max(0, ts - 2 * d), ts + 1)):
            starts.add(start)
            end = start + d
            if start == ts + 1:
                right_created = True
            elif end > ts:
                if right_agg is None:
                    right_agg = (agg, agg_ts)
                self._update(start, (agg, agg_ts))
            elif end == ts:
                left_created = True
                self._update(start, (agg, agg_ts))
                if agg_ts < ts:
                    previous_ts = agg_ts
                else:
                    return
            else:  # end < ts
                left_agg, previous_ts = (agg, agg_ts), agg_ts
                break
        self._create(starts, right_agg, left_agg, left_created, right_created, previous_ts)

    def _early(self) -> None:
        ts = self._ts
        combined = right_agg = None
        right_created = False
        starts: set[int] = set()
        previous_ts = None
        for start, agg, agg_ts in self._windows(0, ts + 1):
            starts.add(start)
            if start == 0:
                combined = (agg, agg_ts)
                if agg_ts < ts:
                    previous_ts = agg_ts
            elif start <= ts:
                right_agg = (agg, agg_ts)
                self._update(start, (agg, agg_ts))
            elif start == ts + 1:
                right_created = True
        if right_agg is None and combined is not None and combined[1] > ts:
            right_agg = combined
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._put_right_window(right_agg)
        if previous_ts is not None and previous_ts + 1 not in starts:
            self._update(previous_ts + 1, (self.initializer(), ts))
        self._update(0, combined if combined is not None else (self.initializer(), ts))

    def _create(self, starts, right_agg, left_agg, left_created, right_created, previous_ts) -> None:
        ts, d = self._ts, self.d
        if previous_ts is not None:
            previous_right = previous_ts + 1
            if previous_right not in starts and previous_right + d >= ts:
                self._update(previous_right, (self.initializer(), ts))
        if not left_created:
            if previous_ts is not None and ts - d <= previous_ts:
                self._update(ts - d, (left_agg[0], ts))
            else:
                self._update(ts - d, (self.initializer(), ts))
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._put_right_window(right_agg)

    def _update(self, start: int, current: tuple[Any, int]) -> None:
        """Kafka's updateWindowAndForward."""
        end = start + self.d
        if end < self._close:
            self._context.drop(1)
            return
        old, old_ts = current
        new = self._aggregators[self._row](self._key, self._value, old)
        new_ts = self._ts if old is None else max(self._ts, old_ts)
        self.store.put(self._kb, start, end, (new, new_ts))
        if not self.node.emit_final:
            self._out.append((self._row, start, self._key, new, new_ts))

    def _put_right_window(self, right_agg: tuple[Any, int]) -> None:
        """Kafka's createCurrentRecordRightWindow: the records after this one, as they were."""
        start = self._ts + 1
        self.store.put(self._kb, start, start + self.d, right_agg)
        if not self.node.emit_final:
            self._out.append((self._row, start, self._key, right_agg[0], right_agg[1]))

    def _flow(self, flow: Flow, out: list) -> Flow:
        rows = np.asarray([o[0] for o in out], dtype=np.int64)
        value_type = pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else None
        values, misfits = infer_array([o[3] for o in out], value_type)
        if misfits:
            raise TypeError(f"{self.name}: aggregate values of different types cannot form one table")
        starts = pa.array([o[1] for o in out], pa.int64())
        source = flow.take(rows)
        # Final results are other records' windows: they carry their own keys.
        keys = pa.array([o[2] for o in out], source.key_type) if self.node.emit_final else source.table.column(KEY)
        table = pa.table(
            [source.table.column(SEQ), pa.array([o[4] for o in out], pa.int64()), starts,
             pa.array([o[1] + self.d for o in out], pa.int64()), keys, values],
            schema=flow_schema(source.key_type, values.type, True),
        )
        return Flow(carry_walk(table, source.table), True)

    # -- idle close (deltastreams.streams._internal.processing.idle) -----------------------------------------

    def next_close_ms(self) -> int | None:
        """With emit-final: until the window ending first among those still open closes (stream
        time minus grace passes its end). Without, nothing waits on this operator."""
        if not self.node.emit_final:
            return None
        store = self.store
        store.begin_batch()
        if store.stream_time == NO_TIME:
            return None
        first_end = store.first_end_from(store.stream_time - self.grace)
        if first_end is None:
            return None
        if remembered_key_type(store.store) is None:
            return IDLE_BLOCKED
        return first_end + self.grace + 1 - store.stream_time

    def advance_idle(self, flow: Flow, by_ms: int, context: ProcessContext) -> Flow:
        """Stream time moves on by ``by_ms`` with no record; with emit-final, the windows that
        closes go out, as after a record at the new stream time."""
        out = self.process(flow, context)
        store = self.store
        key_type = advance_windows_store(store, by_ms, context, self.node.emit_final)
        if key_type is None:
            return out
        self._last_emit = last_emitted_close(store.store)
        self._key_type, self._final, self._row = key_type, [], 0
        self._close = store.stream_time - self.grace
        self._emit_closed()
        remember_emitted_close(store.store, self._last_emit)
        store.end_batch(keep_from=self._last_emit if self._last_emit is not None else 0)
        final = self._final
        values, misfits = infer_array([o[3] for o in final], pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else None)
        if misfits:
            raise TypeError(f"{self.name}: aggregate values of different types cannot form one table")
        starts = pa.array([o[1] for o in final], pa.int64())
        table = pa.table(
            [pa.array(np.zeros(len(final), dtype=np.int64)), pa.array([o[4] for o in final], pa.int64()), starts,
             pa.array([o[1] + self.d for o in final], pa.int64()), pa.array([o[2] for o in final], key_type), values],
            schema=flow_schema(key_type, values.type, True),
        )
        return concat_flows([out, Flow(table, True)])
