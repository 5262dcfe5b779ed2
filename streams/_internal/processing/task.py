"""The processing core: one sub-topology, one task, one batch. No Spark here.

Given a task's input records (per source topic, in offset order) and the task's stores, a
:class:`TaskProcessor` runs the sub-topology's operators and returns the records to append per
output topic (with their target partitions), the changelog entries of its stores, the records it
could not process, and its metrics. One call is one commit: record caching keeps the last revision
per window within it. The Spark runtime and the test driver both call this same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from state import ChangeLoggingStore, ChangelogEntry
from streams._internal.processing.aggregate import AggregateProcessor
from streams._internal.processing.flow import (
    KEY,
    SEQ,
    TIMESTAMP,
    VALUE,
    WINDOW_END,
    WINDOW_START,
    BadRecords,
    Flow,
    concat_flows,
)
from streams._internal.processing.stateless import STATELESS
from streams._internal.processing.suppress import SuppressProcessor
from conf.errors import TopologyError

REJECTED = "_rejected"
from topology.graph import SubTopology, Topology
from topology.nodes import AggregateNode, SinkNode, SourceNode, SuppressNode, ToStreamNode

DEAD_LETTER_VALUE = pa.struct(
    [
        ("value", pa.string()),
        ("source_topic", pa.string()),
        ("source_partition", pa.int32()),
        ("source_offset", pa.int64()),
        ("node", pa.string()),
        ("task", pa.string()),
        ("reason", pa.string()),
    ]
)
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
    """Records (per window) dropped as too late: ``end + grace <= stream time``."""
    processed: int = 0


@dataclass
class _Inputs:
    """The task's input records, concatenated; ``_seq`` indexes them."""

    topics: list[str] = field(default_factory=list)
    partitions: list[np.ndarray] = field(default_factory=list)
    offsets: list[np.ndarray] = field(default_factory=list)
    timestamps: list[np.ndarray] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.sizes)

    def add(self, topic: str, records: pa.Table) -> int:
        base = self.total
        self.topics.append(topic)
        self.partitions.append(records.column("partition").to_numpy(zero_copy_only=False))
        self.offsets.append(records.column("offset").to_numpy(zero_copy_only=False))
        self.timestamps.append(records.column(TIMESTAMP).fill_null(-1).to_numpy(zero_copy_only=False))
        self.sizes.append(records.num_rows)
        return base

    def locate(self, seqs: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        bounds = np.cumsum(self.sizes)
        which = np.searchsorted(bounds, seqs, side="right")
        within = seqs - (bounds - np.asarray(self.sizes))[which]
        topics = [self.topics[w] for w in which]
        partitions = np.array([self.partitions[w][i] for w, i in zip(which, within, strict=True)], dtype=np.int32)
        offsets = np.array([self.offsets[w][i] for w, i in zip(which, within, strict=True)], dtype=np.int64)
        stamps = np.array([self.timestamps[w][i] for w, i in zip(which, within, strict=True)], dtype=np.int64)
        return topics, partitions, offsets, stamps


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
    ) -> None:
        self.topology = topology
        self.subtopology = subtopology
        self.task_id = TaskId(subtopology.id, partition)
        self.stores = stores
        self.caching = caching
        self.fail_on_bad_record = fail_on_bad_record
        self.late_records_topic = late_records_topic
        self._processors: dict[str, AggregateProcessor | SuppressProcessor] = {}
        # With an entry node (the end of a prefix Spark already ran as Catalyst), the inputs are
        # that node's output and the core runs only what follows it.
        self.entry = entry
        self._skipped: frozenset[str] = frozenset()
        if entry is not None:
            chain = subtopology.nodes[: subtopology.nodes.index(entry) + 1]
            self._skipped = frozenset(chain)
        self._source_topics = tuple(
            t for n in subtopology.nodes if isinstance(topology.nodes[n], SourceNode) for t in topology.nodes[n].topics
        )
        for name in subtopology.nodes:
            if name in self._skipped:
                continue
            node = topology.nodes[name]
            function = getattr(node, "predicate", None) or getattr(node, "mapper", None) or getattr(node, "action", None)
            if function is not None and function.is_column:
                raise TopologyError(
                    f"{name} uses a Spark Column expression; the engine-independent core (and the "
                    "TopologyTestDriver) runs Python callables, the Spark runtime compiles Columns to Catalyst",
                    node=name,
                )
            if isinstance(node, AggregateNode):
                self._processors[name] = AggregateProcessor(node, stores[node.store], caching)
            elif isinstance(node, SuppressNode):
                self._processors[name] = SuppressProcessor(node, stores[node.store])

    def stream_time(self, node: str) -> int | None:
        processor = self._processors.get(node)
        return processor.stream_time if isinstance(processor, AggregateProcessor) else None

    def process(self, inputs: Mapping[str, pa.Table]) -> TaskResult:
        """Run one batch: ``inputs`` maps each source topic (logical name) to its records in
        record form (``partition``, ``offset``, ``timestamp``, ``key``, ``value``), offset order."""
        bad = BadRecords(self.fail_on_bad_record, str(self.task_id))
        seen = _Inputs()
        result = TaskResult()
        flows: dict[str, Flow] = {}
        sink_flows: dict[str, list[Flow]] = {}
        late: list[Flow] = []
        nodes = self.topology.nodes
        for name in self.subtopology.nodes:
            node = nodes[name]
            if name == self.entry:
                flows[name] = self._source_flow(name, self._source_topics, inputs, seen, bad)
                continue
            if name in self._skipped:
                continue
            if isinstance(node, SourceNode):
                flows[name] = self._source_flow(name, node.topics, inputs, seen, bad)
                continue
            flow = concat_flows([flows[p] for p in self.topology.parents[name]])
            if isinstance(node, AggregateNode):
                out = self._processors[name].process(flow, bad)
                result.dropped_records += out.dropped
                if len(out.late):
                    late.append(out.late)
                flow = out.revisions
            elif isinstance(node, SuppressNode):
                flow = self._processors[name].process(flow)
            elif isinstance(node, SinkNode):
                sink_flows.setdefault(node.topic, []).append(flow)
            elif isinstance(node, ToStreamNode):
                pass
            else:
                flow = STATELESS[type(node)](node, flow, bad)
            flows[name] = flow

        for topic, parts in sink_flows.items():
            result.outputs[topic] = _output(concat_flows(parts))
        if late and self.late_records_topic:
            result.outputs[self.late_records_topic] = _output(concat_flows(late))
        result.dead_letters = self._dead_letters(bad, seen)
        result.changelogs = {name: store.changelog() for name, store in self.stores.items()}
        result.processed = seen.total
        return result

    def _source_flow(self, node: str, topics: tuple[str, ...], inputs: Mapping[str, pa.Table], seen: _Inputs, bad: BadRecords) -> Flow:
        parts = []
        windowed = False
        for topic in topics:
            records = inputs.get(topic)
            if records is None:
                continue
            base = seen.add(topic, records)
            windowed = WINDOW_START in records.column_names
            columns = {SEQ: pa.array(np.arange(base, base + records.num_rows, dtype=np.int64)), TIMESTAMP: records.column(TIMESTAMP)}
            if windowed:
                columns[WINDOW_START] = records.column(WINDOW_START)
                columns[WINDOW_END] = records.column(WINDOW_END)
            columns[KEY] = records.column(KEY)
            columns[VALUE] = records.column(VALUE)
            parts.append(Flow(pa.table(columns), windowed))
        flow = concat_flows(parts) if parts else Flow.empty()
        flow = self._reject_marked(node, topics, inputs, flow, bad)
        stamps = flow.table.column(TIMESTAMP)
        invalid = np.asarray(stamps.is_null()) | (stamps.fill_null(-1).to_numpy(zero_copy_only=False) < 0)
        if invalid.any():
            seqs, keys, values = flow.seqs, flow.keys(), flow.values()
            for i in np.flatnonzero(invalid):
                bad.reject(seqs[i], node, "invalid timestamp: records need a non-negative epoch-ms timestamp", keys[i], values[i])
            flow = flow.filter(~invalid)
        return flow

    def _reject_marked(self, node: str, topics, inputs: Mapping[str, pa.Table], flow: Flow, bad: BadRecords) -> Flow:
        """Records a step before the core (Catalyst) marked bad, in column ``_rejected``."""
        marks = [inputs[t].column(REJECTED) for t in topics if t in inputs and REJECTED in inputs[t].column_names]
        if not marks or not len(flow):
            return flow
        reasons = pa.chunked_array([c for m in marks for c in m.chunks], pa.string()).combine_chunks()
        marked = np.asarray(reasons.is_valid())
        if not marked.any():
            return flow
        seqs, keys, values, texts = flow.seqs, flow.keys(), flow.values(), reasons.to_pylist()
        for i in np.flatnonzero(marked):
            bad.reject(seqs[i], node, texts[i], keys[i], values[i])
        return flow.filter(~marked)

    def _dead_letters(self, bad: BadRecords, seen: _Inputs) -> pa.Table:
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


def _output(flow: Flow) -> pa.Table:
    columns = {TIMESTAMP: flow.table.column(TIMESTAMP)}
    if flow.windowed:
        columns[WINDOW_START] = flow.table.column(WINDOW_START)
        columns[WINDOW_END] = flow.table.column(WINDOW_END)
    columns[KEY] = flow.table.column(KEY)
    columns[VALUE] = flow.table.column(VALUE)
    return pa.table(columns)
