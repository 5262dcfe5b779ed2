"""Stream-stream joins: Kafka's KStreamJoinWindow (KSTREAM-WINDOWED) and KStreamKStreamJoin
(both sides, with the spurious-result fix of Kafka 3.1+).

Kafka runs a record through its side's windowed node (into that side's window store) and its
join processor (looking up the other side's store) before the next record comes up; which record
comes next is the task's order over both inputs (``_seq``). The core runs a batch operator by
operator instead, so a side's join cannot see the other side's records as they arrive. Both
sides therefore share one :class:`StreamStreamJoin`: the windowed nodes hand it their batch, and
the first join operator to run processes both sides' records together, in ``_seq`` order, one
at a time exactly as Kafka's processors do (the put, the stream time, the fetch, the emission of
closed non-joined records); each join operator then returns its side's results. Inner and left
joins take a batch of 100 records or more an array at a time instead, with the same results
(:mod:`~deltastreams.streams._internal.processing.stream_join_batch`); one record at a time stays the
reference, and the path for everything else.

Kafka keeps the join's stream time and ``minTime`` in memory; here they are in the outer store,
so a restarted task continues as the old one would have (exactly-once needs the same results).
Kafka also throttles the emission of non-joined records to once per second of wall-clock time
(``__emit.interval.ms.kstreams.outer.join.spurious.results.fix__``; its TopologyTestDriver sets it
to 0); here every record that reaches stream time checks, as with the throttle at 0: the same
records, possibly sooner (see docs/differences-from-kafka.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.sinks.serde import key_bytes
from deltastreams.state.join_stores import LEFT, NO_TIME, RIGHT, JoinWindowStore, OuterJoinStore
from deltastreams.conf.errors import ProcessingError
from deltastreams.streams._internal.processing.flow import SEQ, WALK, Flow, flow_schema, infer_array
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.stateless import _typed
from deltastreams.streams._internal.processing.stream_join_batch import SideOutput, covers, join_batch
from deltastreams.streams._internal.processing.walk import walk_column, walks
from deltastreams.topology.nodes import JoinKind, JoinWindowsSpec, StreamJoinWindowNode, StreamStreamJoinNode
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE

_LONG_MAX = 2**63 - 1


class _SideResults:
    """What one side's join processor forwards during a batch."""

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.walks: list[bytes] = []
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.stamps: list[int] = []
        self.walk = b""
        """The walk of the record being processed (:mod:`deltastreams.streams._internal.processing.walk`)."""

    def forward(self, seq: int, key: Any, value: Any, timestamp: int) -> None:
        self.seqs.append(seq)
        self.walks.append(self.walk)
        self.keys.append(key)
        self.values.append(value)
        self.stamps.append(timestamp)


class StreamStreamJoin:
    """Both sides of one stream-stream join, processed together per batch."""

    def __init__(self, left: StreamStreamJoinNode, build: BuildContext) -> None:
        self.windows: JoinWindowsSpec = left.windows
        self.left_outer = left.kind is not JoinKind.INNER
        self.right_outer = left.kind is JoinKind.OUTER
        self.joiner = left.joiner
        self.outer_sides = frozenset(side for side, outer in ((LEFT, self.left_outer), (RIGHT, self.right_outer)) if outer)
        retention = self.windows.retention_ms
        self.left_store_name, self.right_store_name = left.this_store, left.other_store
        self.stores = {
            LEFT: JoinWindowStore(build.stores[left.this_store], retention),
            RIGHT: JoinWindowStore(build.stores[left.other_store], retention),
        }
        self.outer = OuterJoinStore(build.stores[left.outer_store]) if left.outer_store is not None else None
        self.node_names: dict[int, str] = {}
        self._offered: dict[int, Flow] = {}
        self._results: dict[int, _SideResults | SideOutput] = {}

    def side_of_store(self, store: str) -> int:
        return LEFT if store == self.left_store_name else RIGHT

    # -- the batch hand-off ---------------------------------------------------------------------

    def offer(self, side: int, flow: Flow) -> None:
        """A windowed node's batch; the results of the previous batch are gone."""
        self._offered[side] = flow
        self._results.clear()

    def results(self, side: int, context: ProcessContext) -> tuple[Flow, _SideResults | SideOutput]:
        """This side's input flow and the records its join processor forwards."""
        if not self._results:
            if set(self._offered) != {LEFT, RIGHT}:
                raise RuntimeError("a stream-stream join ran before both of its windowed nodes")
            self._run(context)
        return self._offered[side], self._results[side]

    def _run(self, context: ProcessContext) -> None:
        if covers(self.windows, self.outer_sides, sum(len(flow) for flow in self._offered.values())):
            outputs = join_batch(self._offered, self.windows, self.outer_sides, self.joiner, self.stores, self.outer, self.node_names, context)
            if outputs is not None:
                self._results = outputs
                return
        self._run_records(context)

    # -- Kafka's processors, record by record ---------------------------------------------------

    def _run_records(self, context: ProcessContext) -> None:
        flows = self._offered
        self._results = {LEFT: _SideResults(), RIGHT: _SideResults()}
        for store in self.stores.values():
            store.begin_batch()
        stream_time, min_time = self.outer.begin_batch() if self.outer is not None else (NO_TIME, None)
        self.stream_time, self.min_time = stream_time, min_time

        sides = np.concatenate([np.full(len(flows[LEFT]), LEFT), np.full(len(flows[RIGHT]), RIGHT)]).astype(np.int8)
        seqs = np.concatenate([flows[LEFT].seqs, flows[RIGHT].seqs]).astype(np.int64)
        positions = np.concatenate([np.arange(len(flows[LEFT])), np.arange(len(flows[RIGHT]))])
        # A record of both sides (a self-join) goes through the left side first, as Kafka's
        # windowed nodes are the source's first and second children.
        order = np.lexsort((-sides, seqs))
        columns = {}
        paths = {}
        for side, flow in flows.items():
            columns[side] = (flow.keys(), flow.values(), flow.timestamps, flow.seqs, key_bytes(flow.table.column(KEY)))
            paths[side] = walks(flow)
        batch_keys = {k for side in columns for k in columns[side][4] if k is not None}
        for store in self.stores.values():
            store.preload(batch_keys)
        for i in order:
            side, position = int(sides[i]), int(positions[i])
            keys, values, stamps, record_seqs, raw_keys = columns[side]
            self._results[side].walk = paths[side][position] if paths[side] is not None else b""
            self._process(side, keys[position], values[position], int(stamps[position]), int(record_seqs[position]), raw_keys[position], context)

        for store in self.stores.values():
            store.end_batch()
        if self.outer is not None:
            self.outer.end_batch(self.stream_time, self.min_time)

    def _window_for(self, side: int) -> tuple[int, int]:
        """``(before, after)`` as seen from ``side`` (the right side looks the other way)."""
        w = self.windows
        return (w.before_ms, w.after_ms) if side == LEFT else (w.after_ms, w.before_ms)

    def _join(self, side: int, key: Any, this_value: Any, other_value: Any, seq: int, context: ProcessContext) -> tuple[bool, Any]:
        left, right = (this_value, other_value) if side == LEFT else (other_value, this_value)
        joiner = self.joiner
        try:
            return True, (joiner.fn(key, left, right) if joiner.takes_key else joiner.fn(left, right))
        except Exception as e:  # noqa: BLE001 - any user error goes to the dead letters
            context.bad.reject(seq, self.node_names[side], f"{joiner.describe()} raised {type(e).__name__}: {e}", key, this_value, error=e)
            return False, None

    def _process(self, side: int, key: Any, value: Any, ts: int, seq: int, raw_key: bytes | None, context: ProcessContext) -> None:
        other = RIGHT if side == LEFT else LEFT
        out = self._results[side]
        # KStreamJoinWindow: into this side's window store.
        if raw_key is not None and value is not None:
            self.stores[side].put(raw_key, value, ts)
        # KStreamKStreamJoin.process
        self.stream_time = max(self.stream_time, ts)
        outer = self.left_outer if side == LEFT else self.right_outer
        if outer and raw_key is None and value is not None:
            ok, joined = self._join(side, None, value, None, seq, context)
            if ok:
                out.forward(seq, None, joined, ts)
            return
        if raw_key is None or value is None:
            context.drop(1)
            return
        if self.outer is not None and ts == self.stream_time:
            self._emit_closed(side, seq, context)
        before, after = self._window_for(side)
        time_from, time_to = max(0, ts - before), max(0, ts + after)
        partners = self.stores[other].fetch(raw_key, time_from, time_to)
        for other_ts, other_value in partners:
            if self.outer is not None:
                self.outer.remove(OuterJoinStore.entry_key(other_ts, other, raw_key))
            ok, joined = self._join(side, key, value, other_value, seq, context)
            if ok:
                out.forward(seq, key, joined, max(ts, other_ts))
        if outer and not partners:
            if self.outer is None or time_to < self.stream_time:
                ok, joined = self._join(side, key, value, None, seq, context)
                if ok:
                    out.forward(seq, key, joined, ts)
            else:
                self.min_time = ts if self.min_time is None else min(self.min_time, ts)
                self.outer.append(OuterJoinStore.entry_key(ts, side, raw_key), key, value)

    def _emit_closed(self, side: int, seq: int, context: ProcessContext) -> None:
        """Kafka's emitNonJoinedOuterRecords: forward the waiting records whose window has
        closed, oldest first, joined with None."""
        w = self.windows
        _, after = self._window_for(side)
        # Kafka's quick check, Java's long arithmetic included (minTime starts at Long.MAX_VALUE).
        bound = _LONG_MAX if self.min_time is None else self.min_time
        if _java_long(bound + after + w.grace_ms) >= self.stream_time:
            return
        self.min_time = None
        out = self._results[side]
        previous = None
        open_sides: set[int] = set()
        for entry_key, key, value in self.outer.entries():
            entry_ts, entry_side = OuterJoinStore.split(entry_key)
            self.min_time = entry_ts
            if len(open_sides) == 2:
                break
            look_back = w.after_ms if entry_side == LEFT else w.before_ms
            if entry_ts + look_back + w.grace_ms >= self.stream_time:
                open_sides.add(entry_side)
                continue
            if entry_side == side:
                ok, joined = self._join(side, key, value, None, seq, context)
            else:
                ok, joined = self._join(side, key, None, value, seq, context)
            if ok:
                out.forward(seq, key, joined, entry_ts)
            if previous is not None and previous != entry_key:
                self.outer.remove(previous)
            previous = entry_key
        if previous is not None:
            self.outer.remove(previous)


def _java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's long addition wraps."""
    return (value + 2**63) % 2**64 - 2**63


def _shared_join(build: BuildContext, node: StreamStreamJoinNode) -> StreamStreamJoin:
    """The join both sides (and both windowed nodes) share, made by whichever asks first."""
    joins = build.shared.setdefault("stream_joins", {})
    join = joins.get(node.this_store)
    if join is None:
        left = node if node.this_is_left else _mirror(node)
        join = StreamStreamJoin(left, build)
        joins[node.this_store] = joins[node.other_store] = join
    join.node_names[LEFT if node.this_is_left else RIGHT] = node.name
    return join


def _mirror(node: StreamStreamJoinNode) -> StreamStreamJoinNode:
    """The left side's view of a right-side node (only the fields the shared join reads)."""
    return StreamStreamJoinNode(
        node.name, node.joiner, node.other_store, node.this_store, node.outer_store, node.windows, node.kind, this_is_left=True
    )


class StreamJoinWindowOperator(Operator, node=StreamJoinWindowNode):
    """Hands its side's batch to the join (which keeps it in the window store, record by record
    with the join's processing) and forwards it."""

    node: StreamJoinWindowNode

    def __init__(self, node: StreamJoinWindowNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.build = build

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        join: StreamStreamJoin | None = self.build.shared.get("stream_joins", {}).get(self.node.store)
        if join is None:
            raise RuntimeError(f"{self.name}: no stream-stream join reads store '{self.node.store}'")
        join.offer(join.side_of_store(self.node.store), flow)
        return flow


class StreamStreamJoinOperator(Operator, node=StreamStreamJoinNode):
    """One side's results of the shared join, keyed and timed as Kafka forwards them."""

    node: StreamStreamJoinNode

    def __init__(self, node: StreamStreamJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.join = _shared_join(build, node)
        self.side = LEFT if node.this_is_left else RIGHT

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        source, results = self.join.results(self.side, context)
        if not len(results.seqs):
            return Flow.empty(source.key_type, pa.null())
        keys, misfits = infer_array(results.keys, source.key_type)
        if misfits:  # waiting records of the other side whose keys are typed differently
            raise ProcessingError(f"{self.name}: the two joined streams have different key types ({source.key_type} here)", node=self.name)
        table = pa.table(
            {
                SEQ: pa.array(results.seqs, pa.int64()),
                TIMESTAMP: pa.array(results.stamps, pa.int64()),
                KEY: keys,
                VALUE: pa.nulls(len(results.seqs)),
            },
            schema=flow_schema(keys.type, pa.null(), False),
        )
        forked = None if results.walks is None else walk_column(results.walks)
        shaped = Flow(table if forked is None else table.append_column(WALK, forked), False, results.keys, results.values)
        values, fits = _typed(self.name, results.values, None, shaped, context.bad, "value")
        out = shaped.replace(values=values)
        out._keys, out._values = results.keys, results.values
        return out if fits.all() else out.filter(fits)
