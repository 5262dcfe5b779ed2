"""What a task receives, and how it enters the operators.

The input of a sub-topology is decided once, when its operators are built: per source topic,
records in record form (``partition``, ``offset``, ``timestamp``, [``window_start``,
``window_end``], ``key``, ``value``) in offset order, as they come out of one node: the source
node itself, or the last step an engine ran before the core (Spark runs a prefix of Column
expressions as Catalyst). Records may carry a ``REJECTED`` column: a non-null reason marks a
record that step found bad, which goes to the dead-letter topic. Every record gets a ``_seq``
(its index among the task's inputs), so dead letters can name its topic, partition and offset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from deltastreams.streams._internal.processing.flow import SEQ, BadRecords, Flow, concat_flows
from deltastreams.streams._internal.processing.order import sequence_numbers
from deltastreams.streams._internal.processing.value_formats import RAW_VALUE
from deltastreams.topology.records import HEADERS, HEADERS_TYPE, KEY, REJECTED, TIMESTAMP, VALUE, WINDOW_END, WINDOW_START


@dataclass
class SeenInputs:
    """The task's input records, topic by topic, with each record's ``_seq``."""

    topics: list[str] = field(default_factory=list)
    seqs: dict[str, np.ndarray] = field(default_factory=dict)
    """Per topic, the ``_seq`` of its records (assigned before reading: :meth:`order`)."""
    partitions: list[np.ndarray] = field(default_factory=list)
    offsets: list[np.ndarray] = field(default_factory=list)
    timestamps: list[np.ndarray] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    headers: dict[str, pa.ChunkedArray] = field(default_factory=dict)
    """Per topic whose records carry headers, the column."""

    @property
    def total(self) -> int:
        return sum(self.sizes)

    @classmethod
    def order(cls, inputs: Mapping[str, pa.Table], topics: list[str], first: Sequence[str] = ()) -> SeenInputs:
        """Number the records of ``topics`` (those present in ``inputs``) in PartitionGroup order,
        after those of the global tables' topics ``first`` (Kafka reads a global table before the
        stream side)."""
        seqs: dict[str, np.ndarray] = {}
        start = 0
        for topic in first:
            if topic in inputs:
                seqs[topic] = np.arange(start, start + inputs[topic].num_rows, dtype=np.int64)
                start += inputs[topic].num_rows
        present = [t for t in topics if t in inputs and t not in first]
        if len(present) == 1:  # one topic: offset order, nothing to interleave
            seqs[present[0]] = np.arange(start, start + inputs[present[0]].num_rows, dtype=np.int64)
        elif present:
            stamps = [inputs[t].column(TIMESTAMP).fill_null(-1).to_numpy(zero_copy_only=False) for t in present]
            seqs.update({t: numbers + start for t, numbers in zip(present, sequence_numbers(stamps), strict=True)})
        return cls(seqs=seqs)

    def add(self, topic: str, records: pa.Table) -> np.ndarray:
        """Remember ``records``; returns their ``_seq``."""
        self.topics.append(topic)
        self.partitions.append(records.column("partition").to_numpy(zero_copy_only=False))
        self.offsets.append(records.column("offset").to_numpy(zero_copy_only=False))
        self.timestamps.append(records.column(TIMESTAMP).fill_null(-1).to_numpy(zero_copy_only=False))
        self.sizes.append(records.num_rows)
        if HEADERS in records.column_names:
            self.headers[topic] = records.column(HEADERS)
        return self.seqs[topic]

    def headers_by_seq(self) -> pa.Array | None:
        """Every input record's headers, indexed by ``_seq``; None when no topic carries any."""
        if not self.headers:
            return None
        parts = [self.headers[t].combine_chunks() if t in self.headers else pa.nulls(n, HEADERS_TYPE) for t, n in zip(self.topics, self.sizes, strict=True)]
        order = np.concatenate([self.seqs[t] for t in self.topics])
        return pa.concat_arrays(parts).take(pa.array(np.argsort(order)))

    def stream_times(self, skip: Sequence[str] = ()) -> np.ndarray:
        """The task's stream time after each record (by ``_seq``): the largest timestamp so far,
        over its topics except ``skip`` (global tables, which Kafka's stream time ignores)."""
        by_seq = np.full(self.total, -1, dtype=np.int64)
        for topic, stamps in zip(self.topics, self.timestamps, strict=True):
            if topic not in skip:
                by_seq[self.seqs[topic]] = stamps
        return np.maximum.accumulate(by_seq) if len(by_seq) else by_seq

    def locate(self, seqs: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Topic, partition, offset and timestamp of the input records ``seqs``."""
        where = np.empty(self.total, dtype=np.int64)  # _seq -> index into the concatenated inputs
        where[np.concatenate([self.seqs[t] for t in self.topics])] = np.arange(self.total, dtype=np.int64)
        seqs = where[seqs]
        bounds = np.cumsum(self.sizes)
        which = np.searchsorted(bounds, seqs, side="right")
        within = seqs - (bounds - np.asarray(self.sizes))[which]
        topics = [self.topics[w] for w in which]
        partitions = np.array([self.partitions[w][i] for w, i in zip(which, within, strict=True)], dtype=np.int32)
        offsets = np.array([self.offsets[w][i] for w, i in zip(which, within, strict=True)], dtype=np.int64)
        stamps = np.array([self.timestamps[w][i] for w, i in zip(which, within, strict=True)], dtype=np.int64)
        return topics, partitions, offsets, stamps


@dataclass(frozen=True)
class TaskInput:
    """Records of ``topics`` as they come out of node ``after``."""

    after: str
    topics: tuple[str, ...]

    def read(self, inputs: Mapping[str, pa.Table], seen: SeenInputs, bad: BadRecords) -> Flow:
        """The flow of this input's records in ``inputs``; marked records and records with an
        invalid timestamp go to ``bad``."""
        parts = []
        marks = []
        raws = []
        for topic in self.topics:
            records = inputs.get(topic)
            if records is None:
                continue
            seqs = seen.add(topic, records)
            windowed = WINDOW_START in records.column_names
            columns = {SEQ: pa.array(seqs), TIMESTAMP: records.column(TIMESTAMP)}
            if windowed:
                columns[WINDOW_START] = records.column(WINDOW_START)
                columns[WINDOW_END] = records.column(WINDOW_END)
            columns[KEY] = records.column(KEY)
            columns[VALUE] = records.column(VALUE)
            parts.append(Flow(pa.table(columns), windowed))
            if REJECTED in records.column_names:
                marks.append(records.column(REJECTED))
                raws.append(records.column(RAW_VALUE) if RAW_VALUE in records.column_names else pa.nulls(records.num_rows, pa.string()))
        flow = concat_flows(parts) if parts else Flow.empty()
        if marks:
            flow = self._reject_marked(flow, marks, raws, bad)
        return self._reject_invalid_timestamps(flow, bad)

    def _reject_marked(self, flow: Flow, marks: list[pa.ChunkedArray], raws: list, bad: BadRecords) -> Flow:
        if not len(flow):
            return flow
        reasons = pa.chunked_array([c for m in marks for c in m.chunks], pa.string()).combine_chunks()
        marked = np.asarray(reasons.is_valid())
        if not marked.any():
            return flow
        shown = pa.chunked_array([c for r in raws for c in (r.chunks if isinstance(r, pa.ChunkedArray) else [r])], pa.string()).to_pylist()
        seqs, keys, values, texts = flow.seqs, flow.keys(), flow.values(), reasons.to_pylist()
        for i in np.flatnonzero(marked):
            # A value that did not decode is null here: show the bytes that arrived instead.
            bad.reject(seqs[i], self.after, texts[i], keys[i], shown[i] if shown[i] is not None else values[i])
        return flow.filter(~marked)

    def _reject_invalid_timestamps(self, flow: Flow, bad: BadRecords) -> Flow:
        stamps = flow.table.column(TIMESTAMP)
        invalid = np.asarray(stamps.is_null()) | (stamps.fill_null(-1).to_numpy(zero_copy_only=False) < 0)
        if not invalid.any():
            return flow
        seqs, keys, values = flow.seqs, flow.keys(), flow.values()
        for i in np.flatnonzero(invalid):
            bad.reject(seqs[i], self.after, "invalid timestamp: records need a non-negative epoch-ms timestamp", keys[i], values[i])
        return flow.filter(~invalid)
