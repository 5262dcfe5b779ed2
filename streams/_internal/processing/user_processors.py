"""User processors (the Processor API): one instance per task, fed record by record.

The operator makes the processor with its supplier and calls ``init`` before the first record it
sees, once per task: the operator lives as long as its task (in the test driver, and on Spark in
the task's host while its batches commit: :mod:`deltastreams.streams._internal.runtime.live_task`);
``close`` runs when the task is done with it. Records forwarded while a record is processed, or by a punctuation that fires
after it, carry that record's ``_seq``, so they keep the task's order downstream; those of a
record its walk too, those of a punctuation a walk after all of the record's
(:mod:`~deltastreams.streams._internal.processing.walk`).

Punctuation (:mod:`~deltastreams.streams._internal.processing.punctuation`): stream-time schedules are checked
after every record, wall-clock ones at the end of every batch.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.conf.errors import ProcessingError
from deltastreams.sinks.serde import key_bytes_of
from deltastreams.streams._internal.processing.flow import WALK, Flow, flow_schema, infer_array, record_headers
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.punctuation import STREAM_TIME, WALL_CLOCK_TIME, Punctuations, Schedule
from deltastreams.streams._internal.processing.walk import PUNCTUATION, walk_column, walks
from deltastreams.topology.nodes import ProcessNode
from deltastreams.topology.processor_api import Record
from deltastreams.topology.records import HEADERS, headers_array, headers_of


def _store_key(key: Any) -> bytes:
    """A user key's bytes: Kafka's serializations for strings and numbers (so ``range`` orders
    them as Kafka's stores do), pickled otherwise."""
    if isinstance(key, (str, bytes, bool, int, float)):
        return b"s" + key_bytes_of(key, pa.array([key]).type)
    return b"p" + pickle.dumps(key, protocol=5)


class UserKeyValueStore:
    """A processor's typed view of a changelogged key-value store (keys stored with their
    Python value beside the value, so iteration gives them back as they were put)."""

    def __init__(self, store) -> None:
        self._store = store
        self.name = store.name

    def get(self, key: Any) -> Any:
        raw = self._store.get(_store_key(key))
        return None if raw is None else pickle.loads(raw)[1]

    def put(self, key: Any, value: Any) -> None:
        if value is None:
            self.delete(key)
        else:
            self._store.put(_store_key(key), pickle.dumps((key, value), protocol=5))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        current = self.get(key)
        if current is None:
            self.put(key, value)
        return current

    def delete(self, key: Any) -> Any:
        current = self.get(key)
        self._store.delete(_store_key(key))
        return current

    def all(self) -> Iterator[tuple[Any, Any]]:
        for _, raw in self._store.range(None, b"\xff"):
            yield pickle.loads(raw)

    def range(self, key_from: Any, key_to: Any) -> Iterator[tuple[Any, Any]]:
        """Entries with ``key_from <= key <= key_to`` in store order."""
        for _, raw in self._store.range(_store_key(key_from), _store_key(key_to) + b"\x00"):
            yield pickle.loads(raw)

    def approximate_num_entries(self) -> int:
        return sum(1 for _ in self._store.range(None, b"\xff"))


class _Context:
    """The ProcessorContext a user processor gets."""

    def __init__(self, operator: ProcessOperator) -> None:
        self._operator = operator
        self.application_id = operator.application_id
        self.task_id = operator.task_id

    def forward(self, record) -> None:
        self._operator.forward(record)

    def get_state_store(self, name: str) -> UserKeyValueStore:
        if name not in self._operator.user_stores:
            raise ProcessingError(
                f"{self._operator.name}: no store named {name!r} is connected; pass it to process(supplier, {name!r})",
                node=self._operator.name,
            )
        return self._operator.user_stores[name]

    def schedule(self, interval_ms: int, punctuation_type, callback: Callable[[int], None]) -> Schedule:
        return self._operator.punctuations.schedule(interval_ms, punctuation_type, callback)

    def current_stream_time_ms(self) -> int:
        return self._operator.punctuations.stream_time

    def current_system_time_ms(self) -> int:
        return self._operator.punctuations.wall_clock_ms()


class ProcessOperator(Operator, node=ProcessNode):
    node: ProcessNode

    def __init__(self, node: ProcessNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.application_id = build.application_id
        self.task_id = build.task_id
        self.user_stores = {name: UserKeyValueStore(build.stores[name]) for name in node.store_names}
        self.schedule_store = build.stores[node.schedule_store]
        self.processor = None
        self.punctuations: Punctuations | None = None
        self._out: _Forwarded | None = None
        self._current: tuple[int, Any] | None = None  # (seq, key) of the record being processed
        self._walk = b""  # its walk
        self._wall_clock: int | None = build.wall_clock_ms

    # -- what the context does --------------------------------------------------------------------

    def forward(self, record) -> None:
        if self._current is None:
            raise ProcessingError(f"{self.name}: forward() is for process() and punctuations", node=self.name)
        seq, key = self._current
        walk = self._walk
        if self.node.fixed_key and record.key != key:
            raise ProcessingError(f"{self.name}: process_values() keeps the key; forward records with the key {key!r}, not {record.key!r}", node=self.name)
        self._out.add(seq, walk, record)

    # -- the batch --------------------------------------------------------------------------------

    def _started(self) -> None:
        if self.processor is not None:
            return
        self.punctuations = Punctuations(self.name, self.schedule_store, self._wall_clock)
        processor = self.node.supplier()
        if not callable(getattr(processor, "process", None)):
            raise ProcessingError(f"{self.name}: the supplier must return a Processor (with process(record)), got {processor!r}", node=self.name)
        self.processor = processor
        if hasattr(processor, "init"):
            processor.init(_Context(self))

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        self._started()  # before taking the batch's clock: schedules start from the task's start
        punctuations = self.punctuations
        punctuations.wall_clock = context.wall_clock_ms
        out = self._out = _Forwarded()
        keys, values, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        paths = walks(flow) or [b""] * len(flow)
        after = PUNCTUATION if context.walks else b""
        headers = record_headers(flow, context.input_headers() if context.input_headers is not None else None)
        headers = headers_of(headers) if headers is not None else [()] * len(flow)
        # Kafka checks stream-time punctuation once each input record of the task is processed
        # (whatever reached this node of it: several records, or none), at the task's stream time.
        task_times = context.stream_times() if context.stream_times is not None else np.empty(0, dtype=np.int64)
        row, last_key = 0, None

        def process_up_to(seq: int) -> None:
            nonlocal row, last_key
            while row < len(flow) and (seq < 0 or seqs[row] <= seq):
                self._current, self._walk = (int(seqs[row]), keys[row]), paths[row]
                try:
                    self.processor.process(Record(keys[row], values[row], int(stamps[row]), headers[row]))
                except Exception as e:  # noqa: BLE001 - a failing processor rejects its record, as other user functions do
                    context.bad.reject(int(seqs[row]), self.name, f"{type(e).__name__}: {e}", keys[row], values[row], error=e)
                last_key = keys[row]
                row += 1
                if seq < 0:
                    break

        def punctuate(seq: int) -> None:
            self._current, self._walk = (seq, last_key), after
            for _ in punctuations.fire(STREAM_TIME, punctuations.stream_time):
                pass

        for seq, time_ in enumerate(task_times):
            last_key = None
            process_up_to(seq)
            punctuations.stream_time = max(punctuations.stream_time, int(time_))
            punctuate(seq)
        while row < len(flow):  # records from no input of this batch (a punctuation upstream)
            process_up_to(-1)
            punctuate(int(seqs[row - 1]))
        self._current, self._walk = (int(seqs[-1]) if len(flow) else len(task_times) - 1, None), after
        for _ in punctuations.fire(WALL_CLOCK_TIME, punctuations.wall_clock_ms()):
            pass
        self._current = None
        punctuations.save()
        return out.flow(self.name, flow, context)

    def close(self) -> None:
        if self.processor is not None and hasattr(self.processor, "close"):
            self.processor.close()
        self.processor = None


class _Forwarded:
    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.walks: list[bytes] = []
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.stamps: list[int] = []
        self.headers: list[Any] = []

    def add(self, seq: int, walk: bytes, record) -> None:
        self.seqs.append(seq)
        self.walks.append(walk)
        self.keys.append(record.key)
        self.values.append(record.value)
        self.stamps.append(int(record.timestamp))
        self.headers.append(record.headers)

    def flow(self, node: str, source: Flow, context: ProcessContext) -> Flow:
        if not self.seqs:
            return Flow.empty(source.key_type, source.value_type)
        keys, bad_keys = infer_array(self.keys, source.key_type)
        values, bad_values = infer_array(self.values, None)
        table = pa.table(
            [pa.array(self.seqs, pa.int64()), pa.array(self.stamps, pa.int64()), keys, values],
            schema=flow_schema(keys.type, values.type, False),
        ).append_column(HEADERS, headers_array(self.headers))  # a forwarded record's own headers, even none
        paths = walk_column(self.walks)
        out = Flow(table if paths is None else table.append_column(WALK, paths), False, self.keys, self.values)
        misfits = sorted(set(bad_keys) | set(bad_values))
        if not misfits:
            return out
        ok = np.ones(len(out), dtype=bool)
        for i in misfits:
            ok[i] = False
            context.bad.reject(self.seqs[i], node, f"forwarded key {self.keys[i]!r} or value {self.values[i]!r} does not fit the stream's types", self.keys[i], self.values[i])
        return out.filter(ok)
