"""Batch processors (``KStream.process_batches``): user code that takes and returns Arrow tables.

A record-at-a-time processor costs about a microsecond of Python per record and step; a batch
processor is called once per slice of a batch, so it can do its work in pyarrow/numpy and pay
per batch instead.

Slices: the operator cuts the batch after every record at which a stream-time punctuation is
due (computed from the task's stream time per record), calls ``process_batch`` on each slice and
fires the punctuations between slices. So punctuations see exactly the records and the store
state that a record-at-a-time processor's would, and results do not depend on how the input was
cut into micro-batches; with an interval much larger than a batch's time span a batch is one or
two slices.

Outputs and order: ``process_batch`` returns a table of ``key``, ``value``, optionally
``timestamp`` and ``input_row`` (the index, within the slice, of the input record an output comes
from). An output takes its input record's ``_seq`` and, without a timestamp, its timestamp; without
``input_row`` it comes from the slice's last record. Outputs are stably sorted by ``input_row``, so
they merge with other branches in input order, as forwarded records do. A punctuation's callback
may return such a table too (without ``input_row``): its records follow the record after which it
fired and default to the punctuation's time.

Failures: an exception from ``process_batch`` cannot be pinned on one record, so the batch fails
(nothing of it is committed; on Spark the query stops and a restart retries the same batch) with
an error naming the processor. Records a processor knows to be bad it passes to
``context.reject(rows, reason)``: they go to the dead-letter topic like any bad record.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.conf.errors import ProcessingError
from deltastreams.streams._internal.processing.batch_stores import BatchKeyValueStore
from deltastreams.streams._internal.processing.flow import WALK, Flow, concat_flows, flow_schema
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.punctuation import STREAM_TIME, WALL_CLOCK_TIME, Punctuations, Schedule, row_stream_times
from deltastreams.streams._internal.processing.walk import PUNCTUATION, walks
from deltastreams.topology.nodes import BatchProcessNode
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE, WINDOW_END, WINDOW_START

INPUT_ROW = "input_row"
_OUTPUT_COLUMNS = (KEY, VALUE, TIMESTAMP, INPUT_ROW)


class _BatchContext:
    """The context a batch processor gets (:class:`deltastreams.streams.processor.BatchProcessorContext`)."""

    def __init__(self, operator: BatchProcessOperator) -> None:
        self._operator = operator
        self.application_id = operator.application_id
        self.task_id = operator.task_id

    def get_state_store(self, name: str) -> BatchKeyValueStore:
        stores = self._operator.user_stores
        if name not in stores:
            raise ProcessingError(f"{self._operator.name}: no store named {name!r} is connected; pass it to process_batches(supplier, {name!r})", node=self._operator.name)
        return stores[name]

    def schedule(self, interval_ms: int, punctuation_type, callback) -> Schedule:
        return self._operator.punctuations.schedule(interval_ms, punctuation_type, callback)

    def current_stream_time_ms(self) -> int:
        return self._operator.punctuations.stream_time

    def current_system_time_ms(self) -> int:
        return self._operator.punctuations.wall_clock_ms()

    def reject(self, rows: Any, reason: str) -> None:
        self._operator.reject(rows, reason)


class BatchProcessOperator(Operator, node=BatchProcessNode):
    node: BatchProcessNode

    def __init__(self, node: BatchProcessNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.application_id = build.application_id
        self.task_id = build.task_id
        self.user_stores = {name: BatchKeyValueStore(build.stores[name], key_type, value_type, node.name) for name, key_type, value_type in node.store_types}
        self.schedule_store = build.stores[node.schedule_store]
        self.processor = None
        self.punctuations: Punctuations | None = None
        self._wall_clock = build.wall_clock_ms
        self._slice: tuple[Flow, ProcessContext] | None = None  # the slice process_batch is running on

    def _started(self) -> None:
        if self.processor is not None:
            return
        self.punctuations = Punctuations(self.name, self.schedule_store, self._wall_clock)
        processor = self.node.supplier()
        if not callable(getattr(processor, "process_batch", None)):
            raise ProcessingError(f"{self.name}: the supplier must return a BatchProcessor (with process_batch(table)), got {processor!r}", node=self.name)
        self.processor = processor
        if hasattr(processor, "init"):
            processor.init(_BatchContext(self))

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        self._started()  # before taking the batch's clock: schedules start from the task's start
        punctuations = self.punctuations
        punctuations.wall_clock = context.wall_clock_ms
        outputs: list[Flow] = []
        times = row_stream_times(flow, context, punctuations.stream_time)
        start = 0
        while start < len(flow):
            end = self._slice_end(times, start)
            part = flow if start == 0 and end == len(flow) else flow.take(np.arange(start, end))
            outputs.append(self._run_slice(part, context))
            last = end - 1
            punctuations.stream_time = int(times[last])
            for result in punctuations.fire(STREAM_TIME, punctuations.stream_time):
                outputs.append(self._punctuation_outputs(result, int(flow.seqs[last]), punctuations.stream_time, context))
            start = end
        now = punctuations.wall_clock_ms()
        for result in punctuations.fire(WALL_CLOCK_TIME, now):
            outputs.append(self._punctuation_outputs(result, int(flow.seqs[-1]) if len(flow) else -1, now, context))
        punctuations.save()
        nonempty = [o for o in outputs if len(o)]
        return concat_flows(nonempty) if nonempty else Flow.empty(flow.key_type, flow.value_type)

    def _slice_end(self, times: np.ndarray, start: int) -> int:
        """One past the first record from ``start`` after which a stream-time punctuation is due
        (stream times only grow, so a binary search finds it), or the batch's end."""
        due = self.punctuations.next_stream_time_due()
        if due is None:
            return len(times)
        if times[-1] < due:
            return len(times)
        return max(int(np.searchsorted(times, due, side="left")), start) + 1

    def _run_slice(self, part: Flow, context: ProcessContext) -> Flow:
        self._slice = (part, context)
        try:
            result = self.processor.process_batch(_user_table(part))
        except Exception as e:  # noqa: BLE001 - not one record's fault: the batch fails, nothing of it is committed
            raise ProcessingError(
                f"{self.name}: process_batch raised {type(e).__name__}: {e} (task {self.task_id}, {len(part)} records); "
                "the batch fails and is retried on restart: fix the processor, or pass bad records to context.reject(rows, reason)",
                node=self.name, task=self.task_id,
            ) from e
        finally:
            self._slice = None
        return self._outputs(result, part.seqs, part.timestamps, "process_batch", walks(part))

    def _punctuation_outputs(self, result: Any, seq: int, now: int, context: ProcessContext) -> Flow:
        # (a punctuation comes after the whole walk of the record it follows)
        after = [PUNCTUATION] if context.walks else None
        return self._outputs(result, np.array([seq], dtype=np.int64), np.array([now], dtype=np.int64), "a punctuation", after, from_punctuation=True)

    def _outputs(self, result: Any, seqs: np.ndarray, stamps: np.ndarray, what: str, paths: list[bytes] | None = None, *, from_punctuation: bool = False) -> Flow:
        """The flow of a returned table: each row gets its input record's ``_seq`` and walk
        (``paths``, if any) (and timestamp unless it has one), in input order."""
        if result is None:
            return Flow.empty()
        if isinstance(result, pa.RecordBatch):
            result = pa.Table.from_batches([result])
        if not isinstance(result, pa.Table):
            raise ProcessingError(f"{self.name}: {what} must return a pyarrow.Table (key, value[, timestamp][, input_row]) or None, got {type(result).__name__}", node=self.name)
        names = result.column_names
        unknown = [c for c in names if c not in _OUTPUT_COLUMNS]
        if KEY not in names or VALUE not in names or unknown or (from_punctuation and INPUT_ROW in names):
            allowed = "key, value[, timestamp]" if from_punctuation else "key, value[, timestamp][, input_row]"
            raise ProcessingError(f"{self.name}: {what} returned columns {names}; it may return {allowed}", node=self.name)
        if not result.num_rows:
            return Flow.empty()
        rows = np.full(result.num_rows, len(seqs) - 1, dtype=np.int64)
        if INPUT_ROW in names:
            rows = _input_rows(result.column(INPUT_ROW), len(seqs), self.name)
            order = np.argsort(rows, kind="stable")
            if (np.diff(order) != 1).any():
                result, rows = result.take(pa.array(order)), rows[order]
        stamp = stamps[rows]
        if TIMESTAMP in names:
            given = result.column(TIMESTAMP).cast(pa.int64())
            stamp = np.where(np.asarray(given.is_valid()), given.fill_null(0).to_numpy(), stamp)
        keys, values = result.column(KEY).combine_chunks(), result.column(VALUE).combine_chunks()
        table = pa.table([pa.array(seqs[rows], pa.int64()), pa.array(stamp, pa.int64()), keys, values], schema=flow_schema(keys.type, values.type, False))
        if paths is not None:
            table = table.append_column(WALK, pa.array([paths[i] for i in rows], pa.binary()))
        return Flow(table, False)

    def reject(self, rows: Any, reason: str) -> None:
        if self._slice is None:
            raise ProcessingError(f"{self.name}: reject() is for records of the batch process_batch is processing", node=self.name)
        part, context = self._slice
        indices = _input_rows(pa.array(np.asarray(rows, dtype=np.int64)), len(part), self.name)
        keys, values, seqs = part.keys(), part.values(), part.seqs
        for i in indices:
            context.bad.reject(int(seqs[i]), self.name, str(reason), keys[i], values[i])

    def close(self) -> None:
        if self.processor is not None and hasattr(self.processor, "close"):
            self.processor.close()
        self.processor = None


def _user_table(part: Flow) -> pa.Table:
    """What ``process_batch`` sees: the records without the core's bookkeeping (``_seq``)."""
    columns = {KEY: part.table.column(KEY), VALUE: part.table.column(VALUE), TIMESTAMP: part.table.column(TIMESTAMP)}
    if part.windowed:
        columns[WINDOW_START] = part.table.column(WINDOW_START)
        columns[WINDOW_END] = part.table.column(WINDOW_END)
    return pa.table(columns)


def _input_rows(column: pa.Array | pa.ChunkedArray, size: int, node: str) -> np.ndarray:
    if column.null_count or not pa.types.is_integer(column.type):
        raise ProcessingError(f"{node}: input_row must be non-null integers (row indices of the batch), got type {column.type}", node=node)
    rows = column.to_numpy() if isinstance(column, pa.Array) else column.combine_chunks().to_numpy()
    rows = rows.astype(np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= size):
        raise ProcessingError(f"{node}: input_row {int(rows.min() if rows.min() < 0 else rows.max())} is not a row of the batch of {size} records", node=node)
    return rows
