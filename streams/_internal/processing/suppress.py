"""``suppress``: hold a table's revisions back (Kafka's KTableSuppressProcessor).

``until_window_closes``: the buffer keeps the latest revision per window, keyed by (window end,
key, window start). After each revision, the stream time this processor has observed (the largest
revision timestamp, as in Kafka) moves, and every window whose end is at least the delay behind it
(the grace; for sessions the gap plus the grace) is emitted and forgotten, in Kafka's buffer
order: by window end, then key bytes. A window updated after it went out (a session or sliding
window can still take a record at that boundary, as in Kafka) is buffered again and goes out
again. Deletes (a session merged away) are buffered like any revision and never emitted.

A buffered revision keeps its record context as Kafka's buffer does: it goes out with the
timestamp and headers of the latest revision buffered for its window (or key), not those of the
record whose stream time let it out.
"""

from __future__ import annotations

import heapq
import pickle
import struct

import pyarrow as pa

from deltastreams.conf.errors import ProcessingError
from deltastreams.sinks.serde import key_bytes
from deltastreams.state import TimeKeyedStore
from deltastreams.streams._internal.processing.flow import WALK, Flow, concat_flows, flow_schema, infer_array, own_headers, record_headers
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.walk import walk_column, walks
from deltastreams.topology.nodes import SuppressNode
from deltastreams.topology.records import HEADERS, KEY, VALUE, WINDOW_END, WINDOW_START, headers_of

_START = struct.Struct(">q")


class SuppressOperator(Operator, node=SuppressNode):
    node: SuppressNode

    def __init__(self, node: SuppressNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.buffer = TimeKeyedStore(build.stores[node.store])

    def process(self, revisions: Flow, context: ProcessContext) -> Flow:
        inputs = _input_headers(context)
        if self.node.time_limit_ms is not None:
            return _TimeLimit(self.node, self.buffer).process(revisions, inputs)
        if not len(revisions):
            return Flow.empty(revisions.key_type, revisions.value_type, windowed=True)
        return _FinalResults(self.node, self.buffer).process(revisions, inputs)

    # -- idle close (deltastreams.streams._internal.processing.idle) -----------------------------------------

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
        inputs = _input_headers(context)
        if self.node.time_limit_ms is not None:
            emitted = _TimeLimit(self.node, self.buffer).advance_idle(by_ms, flow, inputs)
        else:
            emitted = _FinalResults(self.node, self.buffer).advance_idle(by_ms, flow, inputs)
        context.advanced_to(self.buffer.stream_time)
        return concat_flows([out, emitted])


class _FinalResults:
    def __init__(self, node: SuppressNode, buffer: TimeKeyedStore) -> None:
        self.node, self.buffer = node, buffer
        self.bounded = node.max_records is not None or node.max_bytes is not None

    def process(self, revisions: Flow, input_headers: pa.Array | None) -> Flow:
        table, buffer, delay = revisions.table, self.buffer, self.node.grace_ms
        stamps, seqs = revisions.timestamps, revisions.seqs
        stream_time = buffer.stream_time
        last_horizon = max(stream_time, int(stamps.max())) - delay
        # What can go out in this batch, read once before any write (a range read over a batch's
        # pending writes sorts them all); the batch's own revisions join it as they come.
        due = {(end, suffix): raw for end, suffix, raw in buffer.up_to(last_horizon)}
        queue = list(due)
        heapq.heapify(queue)
        held = {(end, suffix): len(raw) for end, suffix, raw in buffer.all()} if self.bounded else {}
        kbytes = key_bytes(table.column(KEY))
        starts, ends = table.column(WINDOW_START).to_pylist(), table.column(WINDOW_END).to_pylist()
        keys, values = table.column(KEY).to_pylist(), table.column(VALUE).to_pylist()
        headers = _revision_headers(revisions, input_headers)
        paths = walks(revisions) or [b""] * len(revisions)
        out: list[tuple[int, tuple, bytes]] = []
        for i, (kb, start, end, key, value) in enumerate(zip(kbytes, starts, ends, keys, values, strict=True)):
            ts = int(stamps[i])
            stream_time = max(stream_time, ts)
            window = (end, _window_key(self.node, kb, start, end))
            entry = pickle.dumps((key, value, ts, start, end, headers[i]), protocol=5)
            buffer.put(*window, entry)
            if end <= last_horizon:
                if window not in due:
                    heapq.heappush(queue, window)
                due[window] = entry
            if self.bounded:
                held[window] = len(entry)
            while queue and queue[0][0] <= stream_time - delay:
                gone = heapq.heappop(queue)
                buffer.delete(*gone)
                held.pop(gone, None)
                entry_ = _load(due.pop(gone))
                if entry_[1] is not None:  # Kafka's final results drop buffered deletes
                    out.append((int(seqs[i]), entry_, paths[i]))
            if self.bounded:  # checked after every record, once the windows it closed have gone out
                self._check_capacity(len(held), sum(held.values()))
        buffer.forget_up_to(last_horizon)
        buffer.stream_time = stream_time
        return _emitted(out, revisions, input_headers)

    def _check_capacity(self, count: int, size: int) -> None:
        node = self.node
        if (node.max_records is not None and count > node.max_records) or (node.max_bytes is not None and size > node.max_bytes):
            raise ProcessingError(
                f"{node.name} buffer exceeded its max capacity: {count}/{node.max_records} records, {size}/{node.max_bytes} bytes "
                "(until_window_closes holds every open window; raise the bound)",
                node=node.name,
            )

    def advance_idle(self, by_ms: int, template: Flow, input_headers: pa.Array | None) -> Flow:
        """Stream time moves on by ``by_ms`` with no revision (idle close): what that closes
        goes out, in buffer order, deletes dropped."""
        self.buffer.stream_time += by_ms
        out = [
            (0, entry, b"")
            for _, _, raw in self.buffer.take_up_to(self.buffer.stream_time - self.node.grace_ms)
            if (entry := _load(raw))[1] is not None
        ]
        return _emitted(out, template, input_headers)


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

    def process(self, updates: Flow, input_headers: pa.Array | None) -> Flow:
        table = updates.table
        windowed = updates.windowed
        kbytes = key_bytes(table.column(KEY))
        starts = table.column(WINDOW_START).to_pylist() if windowed else [0] * len(kbytes)
        ends = table.column(WINDOW_END).to_pylist() if windowed else [0] * len(kbytes)
        keys, values, stamps, seqs = table.column(KEY).to_pylist(), table.column(VALUE).to_pylist(), updates.timestamps, updates.seqs
        headers = _revision_headers(updates, input_headers)
        paths = walks(updates) or [b""] * len(updates)
        count, size = self._get(_COUNT_KEY), self._get(_BYTES_KEY)
        out: list[tuple[int, tuple, bytes]] = []
        for i, kb in enumerate(kbytes):
            entry_key = _window_key(self.node, kb, starts[i], ends[i]) if windowed else kb
            stamp = int(stamps[i])
            if stamp > self.buffer.stream_time:
                self.buffer.stream_time = stamp
            entry = pickle.dumps((keys[i], values[i], stamp, starts[i], ends[i], headers[i]), protocol=5)
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
            count, size = self._take_due(int(seqs[i]), paths[i], count, size, out)
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
                out.append((int(seqs[i]), _load(raw), paths[i]))
        self.store.put(_COUNT_KEY, _LONG.pack(count))
        self.store.put(_BYTES_KEY, _LONG.pack(size))
        return _emitted(out, updates, input_headers)

    def _take_due(self, seq: int, walk: bytes, count: int, size: int, out: list[tuple[int, tuple, bytes]]) -> tuple[int, int]:
        """Entries at least ``limit`` behind stream time go out, oldest first (to ``out``, as
        forwarded for the record ``seq`` at ``walk``); returns the buffer's count and size after."""
        for _, due_key, raw in self.buffer.take_up_to(self.buffer.stream_time - self.node.time_limit_ms):
            count, size = count - 1, size - len(raw)
            self.store.delete(_INDEX + due_key)
            out.append((seq, _load(raw), walk))
        return count, size

    def advance_idle(self, by_ms: int, template: Flow, input_headers: pa.Array | None) -> Flow:
        """Idle close: stream time ``by_ms`` further; the entries that puts past the limit go out."""
        self.buffer.stream_time += by_ms
        out: list[tuple[int, tuple, bytes]] = []
        count, size = self._take_due(0, b"", self._get(_COUNT_KEY), self._get(_BYTES_KEY), out)
        self.store.put(_COUNT_KEY, _LONG.pack(count))
        self.store.put(_BYTES_KEY, _LONG.pack(size))
        return _emitted(out, template, input_headers)

    def _over(self, count: int, size: int) -> bool:
        node = self.node
        return (node.max_records is not None and count > node.max_records) or (node.max_bytes is not None and size > node.max_bytes)


def _input_headers(context: ProcessContext) -> pa.Array | None:
    return context.input_headers() if context.input_headers is not None else None


def _revision_headers(revisions: Flow, input_headers: pa.Array | None) -> list[tuple]:
    """Each revision's headers as it reached suppress (Kafka buffers its record context)."""
    headers = record_headers(revisions, input_headers)
    return headers_of(headers) if headers is not None else [()] * len(revisions)


def _window_key(node: SuppressNode, kb: bytes, start: int, end: int) -> bytes:
    """A window's key in the buffer, ordered as Kafka's serialized windowed key: the key, then
    the start (time windows, whose end follows from it), or the end and the start (sessions, of
    which a key has several with one start as they merge)."""
    return kb + (_START.pack(end) + _START.pack(start) if node.sessions else _START.pack(start))


def _load(raw: bytes) -> tuple:
    """A buffered entry: ``(key, value, timestamp, start, end, headers)`` (entries buffered before
    headers were kept have none)."""
    entry = pickle.loads(raw)
    return entry if len(entry) == 6 else (*entry, ())


def _emitted(out: list[tuple[int, tuple, bytes]], template: Flow, input_headers: pa.Array | None) -> Flow:
    """The records that went out: ``(seq, entry, walk)`` of the record each went out for."""
    windowed = template.windowed
    if not out:
        return Flow.empty(template.key_type, template.value_type, windowed=windowed)
    keys, _ = infer_array([e[0] for _, e, _ in out], template.key_type)
    values, _ = infer_array([e[1] for _, e, _ in out], template.value_type)
    columns = [pa.array([seq for seq, _, _ in out], pa.int64()), pa.array([e[2] for _, e, _ in out], pa.int64())]
    if windowed:
        columns += [pa.array([e[3] for _, e, _ in out], pa.int64()), pa.array([e[4] for _, e, _ in out], pa.int64())]
    table = pa.table(columns + [keys, values], schema=flow_schema(keys.type, values.type, windowed))
    headers = own_headers([e[5] for _, e, _ in out], input_headers)
    if headers is not None:
        table = table.append_column(HEADERS, headers)
    paths = walk_column([walk for _, _, walk in out])
    return Flow(table if paths is None else table.append_column(WALK, paths), windowed)
