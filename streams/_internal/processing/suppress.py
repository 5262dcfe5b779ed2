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

from conf.errors import ProcessingError
from sinks.serde import key_bytes
from state import TimeKeyedStore
from streams._internal.processing.flow import Flow, concat_flows, flow_schema, infer_array
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
        if self.node.time_limit_ms is not None:
            return _TimeLimit(self.node, self.buffer).process(revisions)
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
        bounded = self.node.max_records is not None or self.node.max_bytes is not None
        held = {suffix: (end, len(raw)) for end, suffix, raw in self.buffer.all()} if bounded else {}
        stream_time = self.buffer.stream_time
        for kb, start, end, key, value, ts in zip(kbytes, starts, ends, keys, values, stamps, strict=True):
            entry = pickle.dumps((key, value, ts, start), protocol=5)
            self.buffer.put(end, kb + _START.pack(start), entry)
            if bounded:  # Kafka checks after every record, once the windows it closed have gone out
                stream_time = max(stream_time, int(ts))
                held[kb + _START.pack(start)] = (end, len(entry))
                for suffix in [s for s, (e, _) in held.items() if e <= stream_time - self.node.grace_ms]:
                    del held[suffix]
                self._check_capacity(len(held), sum(size for _, size in held.values()))
        latest = int(np.max(revisions.timestamps))
        if latest > self.buffer.stream_time:
            self.buffer.stream_time = latest

    def _check_capacity(self, count: int, size: int) -> None:
        node = self.node
        if (node.max_records is not None and count > node.max_records) or (node.max_bytes is not None and size > node.max_bytes):
            raise ProcessingError(
                f"{node.name} buffer exceeded its max capacity: {count}/{node.max_records} records, {size}/{node.max_bytes} bytes "
                "(until_window_closes holds every open window; raise the bound)",
                node=node.name,
            )

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

    # -- idle close (streams._internal.processing.idle) -----------------------------------------

    def next_close_ms(self) -> int | None:
        """Until the oldest buffered entry goes out: its window closes (end plus grace) or, with
        a time limit, its time is ``limit`` behind stream time."""
        stream_time = self.buffer.stream_time
        oldest = next(self.buffer.up_to(2**62), None)
        if stream_time < 0 or oldest is None:
            return None
        wait = self.node.time_limit_ms if self.node.time_limit_ms is not None else self.node.grace_ms
        return oldest[0] + wait - stream_time

    def advance_idle(self, flow: Flow, by_ms: int, context: ProcessContext) -> Flow:
        out = self.process(flow, context)
        if self.buffer.stream_time < 0:
            return out
        if self.node.time_limit_ms is not None:
            emitted = _TimeLimit(self.node, self.buffer).advance_idle(by_ms, flow)
        else:
            self.buffer.stream_time += by_ms
            emitted = self._emit_closed(self.buffer.stream_time - self.node.grace_ms, flow)
        context.advanced_to(self.buffer.stream_time)
        return concat_flows([out, emitted])


_INDEX = b"\xff\xfeindex:"
_COUNT_KEY = b"\xff\xfecount"
_BYTES_KEY = b"\xff\xfebytes"
_LONG = struct.Struct(">q")


class _TimeLimit:
    """``until_time_limit``: Kafka's KTableSuppressProcessor with a record-time definition. A
    key's entry keeps the time its first update was buffered (later updates replace the value,
    not the time), in the buffer's (time, key) order; after each update, entries whose time is at
    least ``limit`` behind the observed stream time go out, oldest first, then the oldest ones
    while the buffer is over its bounds (or the job fails, if it must shut down when full).
    Sizes are the pickled entries' (Kafka counts its serialized bytes: byte bounds differ)."""

    def __init__(self, node: SuppressNode, buffer: TimeKeyedStore) -> None:
        self.node, self.buffer = node, buffer
        self.store = buffer.store

    def _get(self, key: bytes) -> int:
        raw = self.store.get(key)
        return 0 if raw is None else _LONG.unpack(raw)[0]

    def process(self, updates: Flow) -> Flow:
        table = updates.table
        windowed = updates.windowed
        kbytes = key_bytes(table.column(KEY))
        starts = table.column(WINDOW_START).to_pylist() if windowed else [0] * len(kbytes)
        ends = table.column(WINDOW_END).to_pylist() if windowed else [0] * len(kbytes)
        keys, values, stamps, seqs = table.column(KEY).to_pylist(), table.column(VALUE).to_pylist(), updates.timestamps, updates.seqs
        count, size = self._get(_COUNT_KEY), self._get(_BYTES_KEY)
        out: list[tuple[int, tuple]] = []
        for i, kb in enumerate(kbytes):
            entry_key = kb + (_START.pack(starts[i]) if windowed else b"")
            stamp = int(stamps[i])
            if stamp > self.buffer.stream_time:
                self.buffer.stream_time = stamp
            entry = pickle.dumps((keys[i], values[i], stamp, starts[i], ends[i]), protocol=5)
            raw_time = self.store.get(_INDEX + entry_key)
            if raw_time is None:
                buffered_at = stamp
                count += 1
                self.store.put(_INDEX + entry_key, _LONG.pack(buffered_at))
            else:
                buffered_at = _LONG.unpack(raw_time)[0]
                size -= len(self.buffer.get(buffered_at, entry_key) or b"")
            self.buffer.put(buffered_at, entry_key, entry)
            size += len(entry)
            count, size = self._take_due(int(seqs[i]), count, size, out)
            while self._over(count, size):
                if self.node.shut_down_when_full:
                    raise ProcessingError(
                        f"{self.node.name} buffer exceeded its max capacity: {count}/{self.node.max_records} records, "
                        f"{size}/{self.node.max_bytes} bytes (BufferConfig ... shut_down_when_full); raise the bounds or emit early",
                        node=self.node.name,
                    )
                oldest_time, oldest_key, raw = next(self.buffer.up_to(2**62))
                self.buffer.delete(oldest_time, oldest_key)
                self.store.delete(_INDEX + oldest_key)
                count, size = count - 1, size - len(raw)
                out.append((int(seqs[i]), pickle.loads(raw)))
        self.store.put(_COUNT_KEY, _LONG.pack(count))
        self.store.put(_BYTES_KEY, _LONG.pack(size))
        return _emitted(out, updates)

    def _take_due(self, seq: int, count: int, size: int, out: list[tuple[int, tuple]]) -> tuple[int, int]:
        """Entries at least ``limit`` behind stream time go out, oldest first (to ``out``);
        returns the buffer's count and size after."""
        for _, due_key, raw in self.buffer.take_up_to(self.buffer.stream_time - self.node.time_limit_ms):
            count, size = count - 1, size - len(raw)
            self.store.delete(_INDEX + due_key)
            out.append((seq, pickle.loads(raw)))
        return count, size

    def advance_idle(self, by_ms: int, template: Flow) -> Flow:
        """Idle close: stream time ``by_ms`` further; the entries that puts past the limit go out."""
        self.buffer.stream_time += by_ms
        out: list[tuple[int, tuple]] = []
        count, size = self._take_due(0, self._get(_COUNT_KEY), self._get(_BYTES_KEY), out)
        self.store.put(_COUNT_KEY, _LONG.pack(count))
        self.store.put(_BYTES_KEY, _LONG.pack(size))
        return _emitted(out, template)

    def _over(self, count: int, size: int) -> bool:
        node = self.node
        return (node.max_records is not None and count > node.max_records) or (node.max_bytes is not None and size > node.max_bytes)


def _emitted(out: list[tuple[int, tuple]], template: Flow) -> Flow:
    windowed = template.windowed
    if not out:
        return Flow.empty(template.key_type, template.value_type, windowed=windowed)
    keys, _ = infer_array([e[0] for _, e in out], template.key_type)
    values, _ = infer_array([e[1] for _, e in out], template.value_type)
    columns = [pa.array([seq for seq, _ in out], pa.int64()), pa.array([e[2] for _, e in out], pa.int64())]
    if windowed:
        columns += [pa.array([e[3] for _, e in out], pa.int64()), pa.array([e[4] for _, e in out], pa.int64())]
    return Flow(pa.table(columns + [keys, values], schema=flow_schema(keys.type, values.type, windowed)), windowed)
