"""One task's micro-batches, on whatever machine runs it: records in, files out.

Per batch a task merges the fresh repartition records the upstream stage staged for its partition
(:mod:`deltastreams.streams._internal.runtime.merge`), reads its committed input files, catches its stores up
with their committed changelogs, runs the processing core, and writes every output through the
record collector. Nothing it writes is visible until the driver's commit adds the files; the
stores do not change until the next batch finds the changelog committed
(:mod:`deltastreams.state.task_stores`).

A :class:`TaskExecutor` lives as long as the process that runs the task (its task host,
:mod:`deltastreams.streams._internal.runtime.task_host`), so the stores stay open between batches,
and so do the task's operators while its batches commit
(:mod:`deltastreams.streams._internal.runtime.live_task`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict

import pyarrow as pa

from deltastreams.sinks import BadInput, DataFile, Topic, read_input, use_storage_options
from deltastreams.sinks.kafka import read_range
from deltastreams.state import ChangelogPosition, StoreCorruptedError, TaskStores
from deltastreams.streams._internal.processing.task import DEAD_LETTER_SCHEMA, TaskProcessor
from deltastreams.streams._internal.runtime.bad_input import BadInputReport, dead_letters
from deltastreams.streams._internal.runtime.collector import RecordCollector, collect
from deltastreams.streams._internal.runtime.live_task import LiveTask
from deltastreams.streams._internal.runtime.merge import merge_fresh
from deltastreams.streams._internal.runtime.plan import BatchPlan, BatchSettings, SubtopologyPlan, TaskOutcome, TaskPlan
from deltastreams.streams._internal.runtime.timing import Phases
from deltastreams.topology.nodes import SourceNode

log = logging.getLogger("deltastreams")

Staged = Mapping[str, Sequence[tuple[int, DataFile]]]
"""Per fresh repartition topic: (writer, staged file) pairs for this task's partition."""


class TaskExecutor:
    """Runs the batches of one task (one sub-topology partition) with its stores kept open."""

    def __init__(self, state_dir: str, application_id: str, task_id: str) -> None:
        self.stores = TaskStores(state_dir, application_id, task_id)
        self.live = LiveTask()

    def run(self, plan: BatchPlan, task: TaskPlan, staged: Staged, records: Mapping[str, pa.Table] | None = None) -> TaskOutcome:
        """One batch. ``records``: input already read (Catalyst mode), instead of ``task.inputs``."""
        # This process (a task host, maybe on another machine) reads and writes the root's files
        # with the application's storage options, which travel in the plan.
        use_storage_options(plan.settings.storage_options)
        sub = plan.subtopology(task.subtopology)
        for attempt in (1, 2):
            try:
                return self._run(plan, sub, task, staged, records)
            except StoreCorruptedError as e:
                # Found corrupt while processing (RocksDB checks blocks when it reads them): move
                # it aside and run the batch again on a store rebuilt from the changelog.
                self.stores.abort()
                self.live.discard()
                if attempt == 2:
                    raise
                name = next((n for n in self.stores.stores if self.stores.path(n) == e.path), e.store)
                self.stores.quarantine(name, e)
        raise AssertionError("unreachable")

    def _run(self, plan: BatchPlan, sub: SubtopologyPlan, task: TaskPlan, staged: Staged, records: Mapping[str, pa.Table] | None) -> TaskOutcome:
        phases = Phases()
        outcome = TaskOutcome(task.subtopology, task.partition)
        fresh: dict[str, pa.Table] = {}
        with phases.time("merge"):
            for topic, files in staged.items():
                if files:
                    fresh[topic], written = merge_fresh(sub.merges[topic], task.partition, files)
                    outcome.merged.append(written)
        if not task.process:  # the records come in a later run of this batch, which reports the run
            outcome.phases = dict(phases)
            return outcome
        with phases.time("read"):
            bad: list[BadInput] = []
            inputs = _read_inputs(task, bad, records)
            for topic, table in fresh.items():
                inputs[topic] = pa.concat_tables([inputs[topic], table]) if topic in inputs else table
        outcome.bad_input = [asdict(BadInputReport.of(b)) for b in bad]
        if bad and plan.settings.fail_on_bad_record:  # the driver stops the application, naming it
            outcome.phases = dict(phases)
            return outcome
        letters = _dead_letters(plan, task, bad)
        total = sum(t.num_rows for t in inputs.values())
        idle_advance_ms = task.idle_advance_ms if total == 0 else None
        if total == 0 and idle_advance_ms is None:
            outcome.run = self.live.unchanged(task.committed_run)
            if letters.num_rows:  # nothing to process, but bad input to dead-letter all the same
                collector = RecordCollector(sub.outputs, task.partition)
                collector.send(plan.settings.dead_letter_topic, letters)
                outcome.files, outcome.dead_letters = collector.files, letters.num_rows
            outcome.phases = dict(phases)
            return outcome
        try:
            with phases.time("restore"):
                opened = self.stores.prepare(task.changelogs)
            outcome.restored_entries = sum(r.entries for r in self.stores.restores if not r.promoted)
            settings = plan.settings
            with phases.time("build"):
                processor = self.live.begin(
                    _live_key(plan, sub, task),
                    task.committed_run if self.stores.continuous else None,
                    lambda: self._build(plan, sub, task, opened),
                )
            with phases.time("process"):
                result = processor.process(inputs, idle_advance_ms=idle_advance_ms)
                if letters.num_rows:
                    result.dead_letters = pa.concat_tables([letters, result.dead_letters])
            with phases.time("write"):
                collector = RecordCollector(sub.outputs, task.partition)
                stamp = max((int(pa.compute.max(t.column("timestamp")).as_py() or 0) for t in inputs.values() if t.num_rows), default=0)
                if result.idle_stream_time is not None:  # changelog records of an idle advance: stamped with where it went
                    stamp = result.idle_stream_time
                collect(result, collector, dead_letter_topic=settings.dead_letter_topic, changelogs=sub.changelogs, timestamp=stamp)
            self.stores.finish({store: (w.file.path, w.file.min_offset) for store, w in collector.changelog_files.items()})
            outcome.run = self.live.done()
        except BaseException:
            self.stores.abort()
            self.live.discard()  # ahead of the stores now: the next batch starts over from them
            raise
        outcome.files = collector.files
        outcome.processed = result.processed
        outcome.dropped_records = result.dropped_records
        outcome.emitted = sum(t.num_rows for t in result.outputs.values())
        outcome.dead_letters = result.dead_letters.num_rows
        outcome.idle_checked = settings.idle_close
        outcome.idle_advanced, outcome.next_close_ms = result.idle_advanced, result.next_close_ms
        outcome.phases = dict(phases)
        return outcome

    def _build(self, plan: BatchPlan, sub: SubtopologyPlan, task: TaskPlan, stores) -> TaskProcessor:
        settings = plan.settings
        topology = plan.shipped.load()
        return TaskProcessor(
            topology,
            topology.subtopology(task.subtopology),
            task.partition,
            stores,
            caching=settings.caching,
            fail_on_bad_record=settings.fail_on_bad_record,
            late_records_topic=settings.late_records_topic,
            entry=sub.entry,
            application_id=self.stores.application_id,
            idle_close=settings.idle_close,
        )

    def catch_up(self, settings: BatchSettings, positions: Mapping[str, ChangelogPosition]) -> int:
        """As a standby: apply the committed changelog entries this copy lacks; returns how many.

        The next batch that runs here then reads only what was committed since (Kafka Streams'
        standby tasks)."""
        use_storage_options(settings.storage_options)
        self.live.discard()  # a standby runs no batch: the task runs elsewhere now
        try:
            self.stores.prepare(positions)
            return sum(r.entries for r in self.stores.restores)
        finally:
            self.stores.abort()

    def close(self) -> None:
        self.live.discard()
        self.stores.close()


def _live_key(plan: BatchPlan, sub: SubtopologyPlan, task: TaskPlan) -> tuple:
    """What the live operators were built for: another topology, other settings, or a store's
    changelog of another incarnation (a reset) need new ones."""
    settings = plan.settings
    incarnations = tuple(sorted((store, position.table_id) for store, position in task.changelogs.items()))
    return (plan.shipped.key, task.subtopology, sub.entry, settings.caching, settings.fail_on_bad_record, settings.late_records_topic, settings.idle_close, incarnations)


def _read_inputs(task: TaskPlan, bad: list[BadInput], records: Mapping[str, pa.Table] | None = None) -> dict[str, pa.Table]:
    """The task's input records; bad input of topics other writers append to goes to ``bad``.
    ``records``: input already read through Spark (Catalyst mode), rejected files aside."""
    inputs: dict[str, pa.Table] = dict(records) if records is not None else {}
    for source in task.inputs:
        topic = Topic(source.topic, source.uri, source.layout)
        if source.checked:
            files = list(source.files) if records is None else []  # Catalyst mode: the records came through Spark
            read = read_input(topic, files, list(source.versions or [None] * len(source.files))[: len(files)], source.rejected)
            bad += read.bad
            if records is None and source.files:
                inputs[source.topic] = read.records
        elif records is None and source.files:
            inputs[source.topic] = topic.read_files(list(source.files))
    if records is None:
        for read in task.kafka_inputs:
            inputs[read.topic] = read_range(read.source, read.partition, read.start, read.end)
    return inputs


def _dead_letters(plan: BatchPlan, task: TaskPlan, bad: list[BadInput]) -> pa.Table:
    """The dead letters of the bad input a task set apart, named after the topic's source node."""
    if not bad:
        return DEAD_LETTER_SCHEMA.empty_table()
    topology = plan.shipped.load()
    tables = []
    for source in task.inputs:
        mine = [b for b in bad if b.topic == source.topic]
        if mine:
            node = next((n.name for n in topology.nodes.values() if isinstance(n, SourceNode) and source.topic in n.topics), "source")
            tables.append(dead_letters(mine, key_column=source.layout.key_column, node=node, task=task.task_id))
    return pa.concat_tables(tables)
