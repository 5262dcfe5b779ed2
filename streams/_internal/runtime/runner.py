"""One sub-topology's micro-batches: the function Spark calls through ``foreachBatch``.

Per batch: describe the batch to the tasks (:class:`BatchSpec`), run one Spark task per topic
partition that has input (each runs the processing core and writes files), then commit what they
wrote. In ``descriptors`` mode the Spark tasks are an RDD job over (partition, files) pairs; in
``records`` mode they are ``mapInArrow`` over the records, after the Catalyst steps.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from sinks._internal.delta_log import AddedFile, files_added
from sinks._internal.files import filesystem_for
from sinks.spark_source import slices_from_json
from sinks.topics import Topic
from state.task_stores import ChangelogPosition
from streams._internal.runtime.batch import BatchSpec, TaskOutcome
from streams._internal.runtime.task_runner import run_task
from streams._internal.runtime.timing import Phases
from topology.compile import CompiledSubtopology, for_executors

log = logging.getLogger("deltastreams")


def _descriptor_task(spec: BatchSpec, work: tuple[int, str]) -> str:
    partition, files = work
    phases = Phases()
    with phases.time("read"):
        source = Topic(spec.source.physical, spec.source.uri, spec.source.layout)
        records = source.read_files(slices_from_json(files))
    return run_task(spec, partition, records, phases).to_json()


def _records_task(spec: BatchSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_batches(list(batches))
    if table.num_rows == 0:
        return
    partition = table.column("partition")[0].as_py()
    outcome = run_task(spec, partition, table)
    yield pa.RecordBatch.from_pydict({"outcome": [outcome.to_json()]})


@dataclass
class BatchMetrics:
    subtopology: int
    batch_id: int
    tasks: int
    records_in: int
    records_out: int
    dropped_late: int
    dead_letters: int
    restored_entries: int
    process_seconds: float
    commit_seconds: float
    total_seconds: float
    phases: dict[str, float]
    """Driver-side wall time per phase (plan, tasks, consolidate, decide, publish)."""
    task_phases: dict[str, float]
    """Task-side time per phase, summed over the batch's tasks (read, restore, process, write)."""
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) the batch started."""

    def line(self) -> str:
        return (
            f"sub-topology {self.subtopology} batch {self.batch_id}: {self.records_in:,} in, {self.records_out:,} out, "
            f"{self.dropped_late:,} late dropped, {self.dead_letters:,} to DLQ, process {self.process_seconds * 1000:.0f} ms, "
            f"commit {self.commit_seconds * 1000:.0f} ms"
        )

    def profile(self) -> str:
        driver, tasks = Phases(self.phases).describe(), Phases(self.task_phases).describe()
        return f"sub-topology {self.subtopology} batch {self.batch_id} driver: {driver} | tasks (summed): {tasks}"


class StopRequested(Exception):
    """Raised at the start of a micro-batch once the application is stopping: the batch does
    nothing, and Spark does not mark it done."""


class SubtopologyRunner:
    def __init__(self, runtime, compiled: CompiledSubtopology) -> None:
        self.stopping = False
        self.in_batch = threading.Lock()
        self.last_batch_id = -1
        self.runtime = runtime
        self.compiled = compiled
        self.sub = compiled.subtopology
        registry = runtime.registry
        self.tasks = registry.tasks(self.sub)
        self.recent_changelog: dict[str, dict[int, tuple[AddedFile, ...]]] = {s: {} for s in self.sub.stores}
        self.history: list[BatchMetrics] = []
        self.task_topology = for_executors(runtime.topology)
        self.source_uri = runtime.registry.uri(compiled.source_topic)
        self.start_version = -1
        """Source version the query started after (from the transaction log, or -1)."""

    def spec(self, batch_id: int) -> BatchSpec:
        registry, config = self.runtime.registry, self.runtime.config
        positions = {}
        for store in self.sub.stores:
            topic = registry.changelog_topic(store)
            ends = registry.next_offsets(topic)
            positions[store] = {
                p: ChangelogPosition(registry.uri(topic), registry.table_id(topic), p, ends[p], self.recent_changelog[store].get(p, ()))
                for p in range(self.tasks)
            }
        return BatchSpec(
            application_id=config.application_id,
            state_dir=config.local_state_dir,
            batch_id=batch_id,
            attempt=uuid.uuid4().hex,
            topology=self.task_topology,
            subtopology=self.sub.id,
            source=registry.source_target(self.compiled.source_topic),
            entry=self.compiled.entry,
            caching=config.caching,
            fail_on_bad_record=config.on_bad_record.value == "fail",
            late_records_topic=config.late_records_topic,
            outputs={t: registry.target(t) for t in registry.written_by(self.sub)},
            dead_letter_topic=config.dlq_topic,
            changelogs={s: registry.changelog_topic(s) for s in self.sub.stores},
            changelog_positions=positions,
        )

    def plan(self, batch_df, batch_id: int) -> tuple[tuple[int, int], list[tuple[int, str]]]:
        """The batch's source range and, per partition with input, its files.

        Read from Spark's offset log (written before the batch runs): ``offsets/<id>`` ends the
        batch, ``offsets/<id - 1>`` (or the query's start) begins it; the files come from the
        Delta log. Executing ``batch_df`` would give the same answer through a Spark job running
        the source in a Python worker, which costs 0.3-0.5 s per batch (4 s for the first)."""
        bounds = self._offsets_from_log(batch_id)
        if bounds is None:
            rows = batch_df.collect()
            if not rows:
                return (-1, -1), []
            return (rows[0].start_version, rows[0].end_version), [(r.partition, r.files) for r in rows if r.files != "[]"]
        start, end = bounds
        by_partition: dict[int, list] = {}
        for f in files_added(self.source_uri, start, end):
            by_partition.setdefault(f.partition, []).append([f.path, f.partition, f.num_records, f.min_offset, f.max_offset])
        return (start, end), [(p, json.dumps(files)) for p, files in sorted(by_partition.items())]

    def _offsets_from_log(self, batch_id: int) -> tuple[int, int] | None:
        fs, offsets = filesystem_for(f"{self.runtime.checkpoint(self.sub)}/offsets")

        def version(batch: int) -> int | None:
            try:
                with fs.open_input_stream(f"{offsets}/{batch}") as stream:
                    lines = stream.read().decode().splitlines()
                return int(json.loads(lines[-1])["version"])  # "v1", batch metadata, then our offset
            except (OSError, ValueError, KeyError, IndexError):
                return None

        end = version(batch_id)
        start = version(batch_id - 1) if batch_id > 0 else self.start_version
        if end is None or start is None:
            return None
        return start, end

    def run_tasks(self, work: list[tuple[int, str]], spec: BatchSpec) -> list[TaskOutcome]:
        if not work:
            return []
        spark = self.runtime.spark
        if self.compiled.mode == "descriptors":
            texts = spark.sparkContext.parallelize(work, len(work)).map(functools.partial(_descriptor_task, spec)).collect()
        else:
            slices = json.dumps([[partition, json.loads(files)] for partition, files in work])
            records = spark.read.format("deltastreams").option("uri", spec.source.uri).option("slices", slices).load()
            frame = self.compiled.apply(self.runtime.topology, records)
            texts = [row.outcome for row in frame.mapInArrow(functools.partial(_records_task, spec), "outcome string").collect()]
        return [TaskOutcome.from_json(text) for text in texts]

    def __call__(self, batch_df, batch_id: int) -> None:
        if self.stopping:
            raise StopRequested(f"sub-topology {self.sub.id} is stopping")
        with self.in_batch:
            if self.stopping:
                raise StopRequested(f"sub-topology {self.sub.id} is stopping")
            self._run_batch(batch_df, batch_id)
            self.last_batch_id = batch_id

    def _run_batch(self, batch_df, batch_id: int) -> None:
        started_at = time.time()
        started = time.perf_counter()
        phases = Phases()
        with phases.time("plan"):
            source, work = self.plan(batch_df, batch_id)
            if source[1] <= source[0]:
                return
            spec = self.spec(batch_id)
        with phases.time("tasks"):
            outcomes = self.run_tasks(work, spec)
        processed_at = time.perf_counter()
        written = [f for outcome in outcomes for f in outcome.files]
        published = self.runtime.committer.commit(self.sub.id, batch_id, written, source)
        phases.add(published.phases)
        task_phases = Phases()
        for outcome in outcomes:
            task_phases.add(outcome.phases)
        for store in self.sub.stores:
            topic = self.runtime.registry.changelog_topic(store)
            for f in published.files.get(topic, ()):
                self.recent_changelog[store][f.partition] = (AddedFile(f.path, f.partition, f.num_records, f.min_offset, f.max_offset),)
        metrics = BatchMetrics(
            subtopology=self.sub.id,
            batch_id=batch_id,
            tasks=len(outcomes),
            records_in=sum(o.processed for o in outcomes),
            records_out=sum(o.emitted for o in outcomes),
            dropped_late=sum(o.dropped_records for o in outcomes),
            dead_letters=sum(o.dead_letters for o in outcomes),
            restored_entries=sum(o.restored_entries for o in outcomes),
            process_seconds=processed_at - started,
            commit_seconds=published.seconds,
            total_seconds=time.perf_counter() - started,
            phases=dict(phases),
            task_phases=dict(task_phases),
            started_at=started_at,
        )
        self.history.append(metrics)
        self.runtime.progress.batch_done(metrics)
