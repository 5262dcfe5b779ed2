"""Cogroups: Kafka's CogroupedKStream aggregation, several grouped streams folded into one store.

Kafka gives each input stream its own aggregate processor (COGROUPKSTREAM-AGGREGATE), all sharing
one store, followed by a pass-through merge (COGROUPKSTREAM-MERGE). A record goes through its
input's processor (read the key's aggregate, fold it with that input's aggregator, write it,
forward it) before the task's next record comes up, whichever input that one is from: the inputs
interleave record by record, in the task's order (``_seq``). The core runs a batch operator by
operator instead, so, as the two sides of a stream-stream join do, each input's operator hands
its batch over, and the merge runs the cogroup's one aggregation over the records of all inputs
in ``_seq`` order. That aggregation is the very operator a plain, time-, session- or
sliding-windowed aggregation runs (its caching, revisions, lateness and table changes included),
given each record's input (column ``_input``) to pick its aggregator.

Each input's operator skips its records with a null key or value, as Kafka's processors do, so
the dead letters name that input's node.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf.errors import ProcessingError
from deltastreams.streams._internal.processing.aggregate import INPUT, aggregatable
from deltastreams.streams._internal.processing.flow import SEQ, WALK, Flow
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.walk import enter
from deltastreams.topology.nodes import CogroupAggregateNode, CogroupMergeNode
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE


class CogroupInputs:
    """The batches a cogroup's inputs handed over, until its merge takes them."""

    def __init__(self) -> None:
        self._offered: dict[int, tuple[int, Flow]] = {}

    def offer(self, index: int, rank: int, flow: Flow) -> None:
        """Input ``index``'s batch; ``rank`` is its node's place in the depth-first walk of a
        record, which orders a record that reaches two inputs (Kafka hands it to the first-added
        child first)."""
        self._offered[index] = (rank, flow)

    def take(self, node: str) -> Flow:
        """All inputs' records, in the task's order, with their input in column ``_input``."""
        offered, self._offered = self._offered, {}
        parts = [(index, rank, flow) for index, (rank, flow) in sorted(offered.items()) if len(flow)]
        if not parts:
            key_type = next((flow.key_type for _, flow in offered.values()), pa.null())
            return _flow(pa.table({SEQ: pa.array([], pa.int64()), TIMESTAMP: pa.array([], pa.int64()), KEY: pa.array([], key_type)}), pa.array([]), [])
        columns = [SEQ, TIMESTAMP, KEY] + ([WALK] if any(WALK in flow.table.column_names for _, _, flow in parts) else [])
        try:
            head = pa.concat_tables([flow.table.select([c for c in columns if c in flow.table.column_names]) for _, _, flow in parts], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            types = ", ".join(str(flow.key_type) for _, _, flow in parts)
            raise ProcessingError(f"{node}: the cogrouped streams' keys have different types ({types}): {e}", node=node) from e
        values = _values([flow.table.column(VALUE).combine_chunks() for _, _, flow in parts])
        inputs = np.concatenate([np.full(len(flow), index, dtype=np.int32) for index, _, flow in parts])
        ranks = np.concatenate([np.full(len(flow), rank, dtype=np.int64) for _, rank, flow in parts])
        if WALK in head.column_names:  # the records entered the merge by their inputs' edges
            keys = pa.table([head.column(SEQ), head.column(WALK).fill_null(b"")], names=["s", "w"])
            order = pc.sort_indices(keys, sort_keys=[("s", "ascending"), ("w", "ascending")]).to_numpy()
        else:
            order = np.lexsort((ranks, head.column(SEQ).to_numpy()))
        return _flow(head, values, inputs).take(order)


def _values(arrays: list[pa.Array]) -> pa.Array:
    """The inputs' values as one column: their common type, or, as Kafka lets each cogrouped
    stream have its own value type, a dense union of them."""
    if all(a.type == arrays[0].type for a in arrays):
        return pa.concat_arrays(arrays)
    types = np.concatenate([np.full(len(a), i, dtype=np.int8) for i, a in enumerate(arrays)])
    offsets = np.concatenate([np.arange(len(a), dtype=np.int32) for a in arrays])
    return pa.UnionArray.from_dense(pa.array(types, pa.int8()), pa.array(offsets, pa.int32()), arrays)


def _flow(head: pa.Table, values: pa.Array, inputs) -> Flow:
    return Flow(head.append_column(VALUE, values).append_column(INPUT, pa.array(inputs, pa.int32())), False)


def _inputs(build: BuildContext, store: str) -> CogroupInputs:
    """The hand-over of the cogroup keeping ``store``, made by whichever operator asks first."""
    return build.shared.setdefault("cogroups", {}).setdefault(store, CogroupInputs())


class CogroupAggregateOperator(Operator, node=CogroupAggregateNode):
    """One input: skips what Kafka's processor skips, hands the rest to the merge."""

    node: CogroupAggregateNode

    def __init__(self, node: CogroupAggregateNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.inputs = _inputs(build, node.store)
        self.rank = build.ranks.get(node.name, 0)
        # The merge takes this input's records from here, not from the task: they enter it here.
        self.edge = next((rank for (parent, _), rank in build.edges.items() if parent == node.name), self.rank)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        flow = aggregatable(flow, self.name, context)
        self.inputs.offer(self.node.index, self.rank, enter(flow, self.edge) if context.walks else flow)
        return Flow.empty(flow.key_type)  # the merge forwards the results


class CogroupMergeOperator(Operator, node=CogroupMergeNode):
    """The cogroup's aggregation over all inputs' records; its results are the table's updates."""

    node: CogroupMergeNode

    def __init__(self, node: CogroupMergeNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.inputs = _inputs(build, node.aggregation.store)
        self.aggregation = Operator.for_node(node.aggregation, parents, build)

    def store_view(self) -> object | None:
        return self.aggregation.store_view()

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return self.aggregation.process(self.inputs.take(self.name), context)
