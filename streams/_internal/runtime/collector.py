"""The record collector: the one owner of where a task's output records go.

The processing core only says which topic a record is for; :func:`collect` sends one batch's
result (outputs, dead letters, changelog entries) to a :class:`Collector`. On Spark that is the
:class:`RecordCollector`, which decides everything physical: the partition (Kafka's default
partitioner), the offset (dense from where the partition ends), the schema of a topic that does
not exist yet, and the files. The test driver passes the same results through the same
:func:`collect` to a collector that keeps records in memory (one partition per topic). As in Kafka, where ``SinkNode`` and the change-logging stores both
send through one ``RecordCollector``, changelog entries go through it too.

Files are written next to the topics' tables and are not part of any topic until a commit adds
them. A partition written by one task gets its final offsets here. A repartition topic is written
as *staged* files (Arrow IPC, record form, no offsets) that the downstream task of each partition
merges (:mod:`deltastreams.streams._internal.runtime.merge`). A sink partition written by several tasks is
renumbered by the driver before the commit (:mod:`deltastreams.streams._internal.runtime.consolidate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from deltastreams.sinks import Topic, partitions_for, write_staged_file
from deltastreams.state import ChangelogEntry
from deltastreams.streams._internal.processing.task import TaskResult
from deltastreams.streams._internal.runtime.plan import TopicTarget, WrittenFile, schema_to_text


class Collector(Protocol):
    """Where a task's output goes: Spark's files or the test driver's memory."""

    def send(self, topic: str, records: pa.Table) -> None:
        """Records for ``topic`` (no ``partition`` column), in the order the task produced them."""

    def send_changelog(self, topic: str, store: str, entries: Sequence[ChangelogEntry], timestamp: int) -> None:
        """A store's changes of this batch (possibly none), for its changelog ``topic``."""


def collect(result: TaskResult, collector: Collector, *, dead_letter_topic: str, changelogs: Mapping[str, str], timestamp: int) -> None:
    """One batch's result, through ``collector``: changelog entries (``changelogs``: store ->
    changelog topic) with ``timestamp``, then dead letters, then every output topic. The order
    is immaterial on Spark (nothing is visible before the commit); the test driver commits a
    store when its changelog arrives, so stores are committed before downstream tasks run."""
    for store, entries in result.changelogs.items():
        collector.send_changelog(changelogs[store], store, entries, timestamp)
    collector.send(dead_letter_topic, result.dead_letters)
    for topic, records in result.outputs.items():
        collector.send(topic, records)


def with_partitions(records: pa.Table, partitions: int, task_partition: int) -> pa.Table:
    """``records`` (the core's output for one topic) with a leading ``partition`` column.

    Keys go where Kafka's default partitioner puts them. Kafka spreads null-keyed records over
    partitions; keeping them in the writing task's partition (mod ``partitions``) is one
    deterministic such choice, stable across replays."""
    if "key" in records.column_names:
        chosen = partitions_for(records.column("key"), partitions)
        chosen[chosen < 0] = task_partition % partitions
    else:
        chosen = np.full(records.num_rows, task_partition % partitions, dtype=np.int32)
    return records.add_column(0, "partition", pa.array(chosen, pa.int32()))


def changelog_records(entries: Sequence[ChangelogEntry], partition: int, timestamp: int) -> pa.Table:
    """Changelog entries in record form (key and value as bytes) for the task's own partition."""
    n = len(entries)
    return pa.table(
        {
            "partition": pa.array(np.full(n, partition, dtype=np.int32)),
            "timestamp": pa.array(np.full(n, timestamp, dtype=np.int64)),
            "key": pa.array([e.key for e in entries], pa.binary()),
            "value": pa.array([e.value for e in entries], pa.binary()),
        }
    )


class RecordCollector:
    """Turns one task's output records into files of its output topics."""

    def __init__(self, outputs: Mapping[str, TopicTarget], writer: int) -> None:
        self.outputs = outputs
        self.writer = writer
        self.files: list[WrittenFile] = []
        self.changelog_files: dict[str, WrittenFile] = {}
        """Per store: the changelog file of this batch (stores advance from it once committed)."""

    def send(self, topic: str, records: pa.Table) -> None:
        """Records for ``topic`` (no ``partition`` column), in the order the task produced them."""
        if records.num_rows:
            target = self.outputs[topic]
            self._write(target, with_partitions(records, target.partitions, self.writer))

    def send_changelog(self, topic: str, store: str, entries: Sequence[ChangelogEntry], timestamp: int) -> None:
        """A store's changes of this batch, to the changelog partition of this task."""
        if not entries:
            return
        before = len(self.files)
        self._write(self.outputs[topic], changelog_records(entries, self.writer, timestamp))
        if len(self.files) > before:
            self.changelog_files[store] = self.files[before]

    def _write(self, target: TopicTarget, records: pa.Table) -> None:
        if target.staged:
            self.files += [
                WrittenFile(target.logical, self.writer, write_staged_file(target.uri, partition, part))
                for partition, part in _by_partition(records)
            ]
            return
        layout = target.layout_for(records.schema)
        topic = Topic(target.physical, target.uri, layout)
        next_offsets = dict(enumerate(target.next_offsets))
        new = target.layout is None
        schema = schema_to_text(layout.table_schema()) if new else None
        layout_text = layout.to_json() if new else None
        self.files += [
            WrittenFile(target.logical, self.writer, f, schema, layout_text)
            for f in topic.prepare_files(records, next_offsets, transient=target.transient)
        ]


def _by_partition(records: pa.Table):
    """(partition, records without the partition column) in partition order; order kept within."""
    parts = records.column("partition").to_numpy()
    body = records.drop_columns(["partition"])
    order = np.argsort(parts, kind="stable")
    bounds = np.flatnonzero(np.diff(parts[order])) + 1
    for chunk in np.split(order, bounds):
        yield int(parts[chunk[0]]), body.take(pa.array(chunk))
