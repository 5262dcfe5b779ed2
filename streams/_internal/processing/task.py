"""The processing core: one sub-topology, one task, one batch. No Spark, no files here.

Given a task's input records (per source topic, in offset order) and the task's stores, a
:class:`TaskProcessor` runs the sub-topology's operators (:mod:`~deltastreams.streams._internal.processing.plan`)
and returns the records to append per output topic, the changelog entries of its stores, the
records it could not process, and its metrics. Which partition each record goes to is the record
collector's decision. One call is one commit: record caching keeps the last revision per window
within it. The Spark runtime and the test driver both call this same code.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from deltastreams.state import ChangeLoggingStore, ChangelogEntry, ReadOnlyKeyValueStore, ReadOnlyWindowStore
from deltastreams.streams._internal.processing.flow import BadRecords, Flow, concat_flows, record_headers
from deltastreams.streams._internal.processing.idle import next_close_ms
from deltastreams.streams._internal.processing.input import SeenInputs
from deltastreams.streams._internal.processing.operator import BuildContext, ProcessContext
from deltastreams.streams._internal.processing.plan import plan_task
from deltastreams.streams._internal.processing.value_formats import decode_values
from deltastreams.streams._internal.processing.walk import enter, number_forks, turns
from deltastreams.topology.graph import SubTopology, Topology
from deltastreams.topology.nodes import SourceNode
from deltastreams.topology.records import DEAD_LETTER_VALUE, HEADERS, KEY, REJECTED, TIMESTAMP, VALUE, WINDOW_END, WINDOW_START

DEAD_LETTER_SCHEMA = pa.schema([("timestamp", pa.int64()), ("key", pa.string()), ("value", DEAD_LETTER_VALUE)])


@dataclass(frozen=True)
class TaskId:
    """Kafka's task id: sub-topology and partition, printed ``0_1``."""

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"


@dataclass
class TaskResult:
    outputs: dict[str, pa.Table] = field(default_factory=dict)
    """Per logical topic: ``timestamp``, [window columns], ``key``, ``value``, in the order the
    task produced them. Which partition each record goes to is the record collector's decision."""
    changelogs: dict[str, list[ChangelogEntry]] = field(default_factory=dict)
    dead_letters: pa.Table = field(default_factory=DEAD_LETTER_SCHEMA.empty_table)
    dropped_records: int = 0
    """Records skipped by design, as Kafka's dropped-records sensor counts them: per window, a
    record too late for it (``end + grace <= stream time``); a record with a null value reaching
    an aggregation."""
    processed: int = 0
    idle_advanced: bool = False
    """An idle advance moved the task's stream time (deltastreams.streams._internal.processing.idle)."""
    idle_stream_time: int | None = None
    """After an idle advance: the largest stream time it reached (stamps the changelog records)."""
    next_close_ms: int | None = None
    """With idle close on: how much further stream time must move before something closes
    (None: nothing open)."""


class TaskProcessor:
    """Executes one sub-topology for one task (= one partition of its source topics)."""

    def __init__(
        self,
        topology: Topology,
        subtopology: SubTopology,
        partition: int,
        stores: Mapping[str, ChangeLoggingStore],
        *,
        caching: bool = True,
        fail_on_bad_record: bool = False,
        late_records_topic: str | None = None,
        entry: str | None = None,
        application_id: str = "",
        wall_clock_ms: int | None = None,
        idle_close: bool = False,
    ) -> None:
        self.subtopology = subtopology
        self.idle_close = idle_close
        self.task_id = TaskId(subtopology.id, partition)
        self.stores = stores
        self.fail_on_bad_record = fail_on_bad_record
        self.late_records_topic = late_records_topic
        build = BuildContext(stores, caching, topology, application_id=application_id, task_id=str(self.task_id), wall_clock_ms=wall_clock_ms)
        plan = plan_task(topology, subtopology, build, entry=entry)
        self.extractors = {
            topic: node.timestamp_extractor
            for node in (topology.nodes[i.after] for i in plan.inputs)
            if isinstance(node, SourceNode) and node.timestamp_extractor is not None
            for topic in node.topics
        }
        self.value_formats = {
            topic: node.value_format
            for node in (topology.nodes[i.after] for i in plan.inputs)
            if isinstance(node, SourceNode) and node.value_format is not None
            for topic in node.topics
        }
        self.inputs = plan.inputs
        self.operators = plan.operators
        # Records of one input record are ordered by their walk where the order can show: a
        # table read by key (where in the walk it is read), branches meeting again, several sinks
        # of one topic. Elsewhere the flow's order is the walk's and nothing needs keeping.
        sinks = [t for operator in self.operators for t in operator.emits]
        self.walks = bool(build.table_changes) or any(len(o.parents) > 1 for o in self.operators) or len(sinks) > len(set(sinks))
        self.ranks, self.edges = build.ranks, build.edges

    def store(self, name: str) -> ReadOnlyKeyValueStore | ReadOnlyWindowStore:
        """A read-only view of the aggregation store ``name``."""
        for operator in self.operators:
            view = operator.store_view()
            if view is not None and view.name == name:
                return view
        queryable = sorted(v.name for v in (o.store_view() for o in self.operators) if v is not None)
        raise KeyError(f"task {self.task_id} has no queryable store named '{name}'; it has {queryable}")

    def close(self) -> None:
        """The task is done: operators running user code (processors) close it."""
        for operator in self.operators:
            operator.close()

    def process(self, inputs: Mapping[str, pa.Table], *, wall_clock_ms: int | None = None, idle_advance_ms: int | None = None) -> TaskResult:
        """Run one batch: ``inputs`` maps each source topic (logical name) to its records in
        record form (``partition``, ``offset``, ``timestamp``, ``key``, ``value``), offset order.

        ``idle_advance_ms``: without records, move the task's stream time that far (idle close,
        :mod:`deltastreams.streams._internal.processing.idle`), but only if that closes something: otherwise
        nothing changes and nothing is written. Ignored when there are records."""
        context = ProcessContext(BadRecords(self.fail_on_bad_record, str(self.task_id)))
        if self.value_formats:  # first: the timestamp extractor and every operator see decoded values
            inputs = {t: decode_values(t, records, self.value_formats[t]) if t in self.value_formats else records for t, records in inputs.items()}
        if self.extractors:
            inputs = {t: extract_timestamps(records, self.extractors[t]) if t in self.extractors else records for t, records in inputs.items()}
        seen = SeenInputs.order(inputs, [t for task_input in self.inputs for t in task_input.topics], self.subtopology.global_topics)
        flows: dict[str, Flow] = {task_input.after: task_input.read(inputs, seen, context.bad) for task_input in self.inputs}
        context.stream_times = functools.partial(seen.stream_times, self.subtopology.global_topics)
        context.wall_clock_ms = wall_clock_ms
        context.input_headers = functools.cache(seen.headers_by_seq)
        context.walks = self.walks
        if seen.total or idle_advance_ms is None:
            idle_advance_ms = None
        else:
            due = next_close_ms(self.operators)
            if due is None or idle_advance_ms < due:
                return TaskResult(next_close_ms=due)  # an advance that closes nothing is not made
        for operator in self.operators:
            incoming = concat_flows(self._incoming(operator.name, operator.parents, flows))
            if idle_advance_ms is None:
                out = operator.process(incoming, context)
            else:
                out = operator.advance_idle(incoming, idle_advance_ms, context)
            flows[operator.name] = number_forks(out, self.ranks.get(operator.name, 0)) if self.walks else out

        result = TaskResult(dropped_records=context.dropped_records, processed=seen.total)
        result.idle_advanced, result.idle_stream_time = idle_advance_ms is not None, context.idle_stream_time
        if self.idle_close:
            result.next_close_ms = next_close_ms(self.operators)
        for topic, parts in context.outputs.items():
            result.outputs[topic] = _output(self._in_walk_order(parts, context.output_ranks[topic]), context.input_headers())
        if context.late and self.late_records_topic:
            result.outputs[self.late_records_topic] = _output(concat_flows(context.late), context.input_headers())
        result.dead_letters = self._dead_letters(context.bad, seen)
        result.changelogs = {name: store.changelog() for name, store in self.stores.items()}
        return result

    def _in_walk_order(self, parts: list[Flow], ranks: list[int]) -> Flow:
        """The records several sinks wrote to one topic, in the order of their turns (within an
        input record, as Kafka's walk reaches the sinks)."""
        if not self.walks or sum(1 for p in parts if len(p)) < 2:
            return concat_flows(parts)
        parts, ranks = zip(*[(p, r) for p, r in zip(parts, ranks, strict=True) if len(p)], strict=True)
        at = [t for part, rank in zip(parts, ranks, strict=True) for t in turns(part, rank)]
        table = pa.concat_tables([p.table for p in parts], promote_options="permissive")
        order = sorted(range(len(at)), key=at.__getitem__)
        return Flow(table.take(pa.array(order, pa.int64())), parts[0].windowed)

    def _incoming(self, name: str, parents: tuple[str, ...], flows: Mapping[str, Flow]) -> list[Flow]:
        """The parents' outputs; into an operator with several parents, each record enters by
        its parent's edge (branches of one record meeting again stay in the walk's order)."""
        if not self.walks or len(parents) < 2:
            return [flows[p] for p in parents]
        return [enter(flows[p], self.edges.get((p, name), self.ranks.get(name, 1) - 1)) for p in parents]

    def _dead_letters(self, bad: BadRecords, seen: SeenInputs) -> pa.Table:
        if not len(bad):
            return DEAD_LETTER_SCHEMA.empty_table()
        topics, partitions, offsets, stamps = seen.locate(np.asarray(bad.seqs, dtype=np.int64))
        value = pa.StructArray.from_arrays(
            [
                pa.array(bad.values, pa.string()),
                pa.array(topics, pa.string()),
                pa.array(partitions, pa.int32()),
                pa.array(offsets, pa.int64()),
                pa.array(bad.nodes, pa.string()),
                pa.array([str(self.task_id)] * len(bad), pa.string()),
                pa.array(bad.reasons, pa.string()),
            ],
            fields=list(DEAD_LETTER_VALUE),
        )
        return pa.table(
            {
                TIMESTAMP: pa.array(stamps, pa.int64()),
                KEY: pa.array(bad.keys, pa.string()),
                VALUE: value,
            },
            schema=DEAD_LETTER_SCHEMA,
        )


def extract_timestamps(records: pa.Table, extractor) -> pa.Table:
    """``records`` with the extractor's timestamps; a record it fails on keeps a null timestamp
    and is marked rejected with the reason (read as a bad record)."""
    keys, values, stamps = (records.column(c).to_pylist() for c in (KEY, VALUE, TIMESTAMP))
    extracted: list[int | None] = []
    reasons: list[str | None] = list(records.column(REJECTED).to_pylist()) if REJECTED in records.column_names else [None] * len(keys)
    for i, (key, value, stamp) in enumerate(zip(keys, values, stamps, strict=True)):
        try:
            ts = extractor(key, value, stamp)
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise ValueError(f"it returned {ts!r}, not a non-negative int")
        except Exception as e:  # noqa: BLE001 - any failure marks the record, not the batch
            extracted.append(None)
            reasons[i] = reasons[i] or f"the timestamp extractor failed: {type(e).__name__}: {e}"
            continue
        extracted.append(ts)
    table = records.set_column(records.schema.get_field_index(TIMESTAMP), TIMESTAMP, pa.array(extracted, pa.int64()))
    rejected = pa.array(reasons, pa.string())
    if REJECTED in table.column_names:
        return table.set_column(table.schema.get_field_index(REJECTED), REJECTED, rejected)
    return table.append_column(REJECTED, rejected)


def _output(flow: Flow, input_headers: pa.Array | None) -> pa.Table:
    """The records a sink writes, with their headers if any has some (:func:`record_headers`)."""
    columns = {TIMESTAMP: flow.table.column(TIMESTAMP)}
    if flow.windowed:
        columns[WINDOW_START] = flow.table.column(WINDOW_START)
        columns[WINDOW_END] = flow.table.column(WINDOW_END)
    columns[KEY] = flow.table.column(KEY)
    columns[VALUE] = flow.table.column(VALUE)
    headers = record_headers(flow, input_headers)
    if headers is not None:
        columns[HEADERS] = headers
    return pa.table(columns)
