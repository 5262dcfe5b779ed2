"""``suppress(until_window_closes)``: hold a windowed table's revisions, emit each window once.

The buffer keeps the latest revision per window, keyed by (window end, key, window start), so the
windows due are one range scan. A window is emitted, and forgotten, once the stream time this
processor has observed (the largest revision timestamp, as in Kafka) reaches ``end + grace``.
Emission order is Kafka's buffer order: by window end, then key bytes.
"""

from __future__ import annotations

import pickle
import struct

import numpy as np
import pyarrow as pa

from sinks.serde import key_bytes
from state import TimeKeyedStore
from streams._internal.processing.flow import Flow, flow_schema, infer_array
from streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from topology.nodes import SuppressNode
from topology.records import KEY, TIMESTAMP, VALUE, WINDOW_END, WINDOW_START

_START = struct.Struct(">q")


class SuppressOperator(Operator, node=SuppressNode):
    node: SuppressNode

    def __init__(self, node: SuppressNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.buffer = TimeKeyedStore(build.stores[node.store])

    def process(self, revisions: Flow, context: ProcessContext) -> Flow:
        if len(revisions):
            self._buffer(revisions)
        stream_time = self.buffer.stream_time
        if stream_time < 0:
            return Flow.empty(revisions.key_type, revisions.value_type, windowed=True)
        return self._emit_closed(stream_time - self.node.grace_ms, revisions)

    def _buffer(self, revisions: Flow) -> None:
        table = revisions.table
        kbytes = key_bytes(table.column(KEY))
        starts = table.column(WINDOW_START).to_pylist()
        ends = table.column(WINDOW_END).to_pylist()
        keys = table.column(KEY).to_pylist()
        values = table.column(VALUE).to_pylist()
        stamps = table.column(TIMESTAMP).to_pylist()
        for kb, start, end, key, value, ts in zip(kbytes, starts, ends, keys, values, stamps, strict=True):
            self.buffer.put(end, kb + _START.pack(start), pickle.dumps((key, value, ts, start), protocol=5))
        latest = int(np.max(revisions.timestamps))
        if latest > self.buffer.stream_time:
            self.buffer.stream_time = latest

    def _emit_closed(self, horizon: int, template: Flow) -> Flow:
        due = self.buffer.take_up_to(horizon)
        if not due:
            return Flow.empty(template.key_type, template.value_type, windowed=True)
        rows = [pickle.loads(raw) for _, _, raw in due]
        keys, _ = infer_array([r[0] for r in rows], template.key_type if len(template) else None)
        values, _ = infer_array([r[1] for r in rows], template.value_type if len(template) else None)
        # Emitted while processing the batch's last revision: order them after it.
        emit_seq = int(template.seqs.max()) if len(template) else 0
        columns = [
            pa.array([emit_seq] * len(rows), pa.int64()),
            pa.array([r[2] for r in rows], pa.int64()),
            pa.array([r[3] for r in rows], pa.int64()),
            pa.array([end for end, _, _ in due], pa.int64()),
        ]
        return Flow(pa.table(columns + [keys, values], schema=flow_schema(keys.type, values.type, True)), True)
