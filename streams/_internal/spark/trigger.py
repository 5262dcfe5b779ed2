"""One trigger of an application's query: the function Spark calls through ``foreachBatch``.

Per trigger: plan every sub-topology that has input, up to the input topics' latest versions
(:mod:`deltastreams.streams._internal.runtime.planner`), run their tasks as one Spark job
(:mod:`deltastreams.streams._internal.spark.job`), then commit the sub-topologies one after another, upstream
first, each with its own transaction (:mod:`deltastreams.streams._internal.runtime.committer`). A downstream
sub-topology's source positions for its repartition inputs are known once its upstream has
published them; it commits after that, so it never commits input that is not committed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from deltastreams.conf.errors import BatchTimedOutError, DeltaStreamsError
from deltastreams.sinks import delete_file
from deltastreams.streams._internal.runtime.bad_input import BadInputReport, say_dead_lettered
from deltastreams.streams._internal.runtime.committer import Committer
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams._internal.runtime.idle import IdleClock
from deltastreams.streams._internal.runtime.inputs import InputWatcher
from deltastreams.streams._internal.runtime.kafka_sink import KafkaMirror
from deltastreams.streams._internal.runtime.kafka_sources import least, moved
from deltastreams.streams._internal.runtime.plan import TaskOutcome, WrittenFile
from deltastreams.streams._internal.runtime.planner import Planner, TriggerPlan
from deltastreams.streams._internal.runtime.progress import Progress
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.streams._internal.runtime.timing import Phases
from deltastreams.streams._internal.spark.job import TriggerJob
from deltastreams.streams._internal.spark.ticks import TickChannel

log = logging.getLogger("deltastreams")

HISTORY = 10_000


@dataclass
class BatchMetrics:
    """One sub-topology's part of one trigger."""

    subtopology: int
    batch_id: int
    """The trigger's number in this run of the application (0 first), whether the driver ran it
    while the Spark session started or the query did (Spark's own batch ids count only the
    latter); the console and the metrics file say it."""
    tasks: int
    records_in: int
    records_out: int
    dropped_late: int
    dead_letters: int
    restored_entries: int
    process_seconds: float
    """The trigger's Spark job (shared by its sub-topologies)."""
    commit_seconds: float
    total_seconds: float
    """From the trigger's start to this sub-topology's commit."""
    phases: dict[str, float]
    """Driver-side wall time per phase (plan, tasks, consolidate, decide, publish)."""
    task_phases: dict[str, float]
    """Task-side time per phase, summed over the batch's tasks (merge, read, restore, process, write)."""
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) the trigger started."""
    task_locations: dict[int, str] = field(default_factory=dict)
    """On a cluster: partition -> the executor its task ran on (``executor_<host>_<id>``)."""
    task_restored_entries: dict[int, int] = field(default_factory=dict)
    """Partition -> changelog entries its task read back (it ran away from its current stores)."""
    standby_entries: int = 0
    """Entries the standby copies applied during the trigger (all sub-topologies)."""
    sink_timestamps: tuple[int, int] | None = None
    """Oldest and newest timestamp (epoch ms) of the records written to sink topics (not
    repartition topics, changelogs or the DLQ), from the files' stats; None: none written."""

    def line(self) -> str:
        return (
            f"sub-topology {self.subtopology} batch {self.batch_id}: {self.records_in:,} in, {self.records_out:,} out, "
            f"{self.dropped_late:,} late dropped, {self.dead_letters:,} to DLQ, process {self.process_seconds * 1000:.0f} ms, "
            f"commit {self.commit_seconds * 1000:.0f} ms"
        )

    def profile(self) -> str:
        driver, tasks = Phases(self.phases).describe(), Phases(self.task_phases).describe()
        return f"sub-topology {self.subtopology} batch {self.batch_id} driver: {driver} | tasks (summed): {tasks}"


class Trigger:
    """The application's ``foreachBatch`` function."""

    def __init__(
        self,
        planner: Planner,
        job: TriggerJob,
        committer: Committer,
        registry: TopicRegistry,
        progress: Progress,
        *,
        poll_interval_s: float,
        commit_interval_s: float = 0.0,
        idle_clock: IdleClock | None = None,
        kafka_mirror: KafkaMirror | None = None,
        stop_on_bad_input: Callable[[BadInputReport], Exception] | None = None,
    ) -> None:
        self.planner = planner
        self.stop_on_bad_input = stop_on_bad_input
        """With ``on_bad_record = "fail"``: the error that stops the application when a task set
        input apart (a file that cannot be read, values in a column the topic does not have)."""
        self.failure: DeltaStreamsError | None = None
        """The error of ours that failed a trigger (Spark hands the application only its text)."""
        self.kafka_mirror = kafka_mirror
        """Sink topics also published to Kafka, after each decided batch (None: none)."""
        self.job = job
        self.committer = committer
        self.registry = registry
        self.progress = progress
        self.ticks = TickChannel()
        """Ticks the query (through Spark's socket source) when there is input, or an idle task due."""
        self.idle_clock = idle_clock
        """Idle close (None: off): which tasks are due for an idle advance."""
        self.in_batch = threading.Lock()
        # Not while a trigger runs: its due tasks stay due until it commits, and ticks meanwhile
        # would only queue an empty trigger behind it.
        due = (lambda: not self.in_batch.locked() and idle_clock.any_due(_now_ms())) if idle_clock is not None else None
        self.watcher = InputWatcher(planner.inputs.uris, self.consumed, self.ticks.tick, poll_interval_s, due=due, kafka=planner.kafka)
        self._stop = threading.Event()
        self.commit_interval_s = commit_interval_s
        """Least time from one trigger's start to the next one's (the query's own trigger
        interval only says how often it looks for ticks, see :meth:`_wait_for_interval`)."""
        self._last_start = float("-inf")
        self.last_batch_id = -1
        """The query's last batch id (Spark's), once its trigger ran: a stop waits for Spark to record it."""
        self.batches_run = 0
        """Triggers that ran in this run (each committed or abandoned its batch): the next one's number."""
        self.history: deque[BatchMetrics] = deque(maxlen=HISTORY)
        """The most recent batches' metrics (a job runs for days: all of them would not fit)."""
        self.commit_lock = threading.Lock()
        """Held while planning and committing: retention steps take it too, so a step and a
        commit never interleave on a table."""
        self._cleaner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltastreams-staged-cleanup")
        self.committed_runs: dict[tuple[int, int], str] = {}
        """Per task, the run id of its last outcome committed here: its task host keeps its
        operators alive while they hold it (:mod:`deltastreams.streams._internal.runtime.live_task`).
        Empty at start: a new driver knows of no run, so every task builds its operators anew."""

    def __call__(self, batch_df, batch_id: int) -> None:
        # Once stopping, a trigger does nothing: Spark may record it as done, as progress lives
        # in the transaction logs.
        if self.stopping:
            return
        with self.in_batch:
            self._wait_for_interval()
            if self.stopping:
                return
            self._last_start = time.monotonic()
            self._refresh_inputs()
            try:
                self.run(self.watcher.latest())
            except DeltaStreamsError as e:
                self.failure = e
                raise
            self.last_batch_id = batch_id
            self._tick_if_pending()

    def run_before_query(self) -> bool:
        """One trigger the driver runs itself while its Spark session is still starting: the same
        steps as the query's triggers, on the input there is now, the commit interval kept. Returns whether anything
        ran. What needs Spark (a sub-topology read through Catalyst) waits for the session."""
        with self.in_batch:
            self._wait_for_interval()
            if self.stopping:
                return False
            self._refresh_inputs()
            started = time.monotonic()
            ran = self.run(self.watcher.latest())
            if ran:
                self._last_start = started
            return ran

    def input_pending(self) -> bool:
        """Whether an input topic has records not yet consumed, as of now."""
        self._refresh_inputs()
        return self.watcher.pending()

    def _refresh_inputs(self) -> None:
        """The input topics' versions as of now, not of the watcher's last poll (up to half an
        interval old): a trigger takes what was appended just before it."""
        try:
            self.watcher.refresh()
        except Exception:  # noqa: BLE001 - a transient read error: the watcher's poll looks again
            log.debug("looking for new input failed", exc_info=True)

    def _tick_if_pending(self) -> None:
        """Input left behind by a bounded batch, or appended while the trigger ran: the next
        trigger at once (after the interval), not after the watcher's next poll."""
        self._refresh_inputs()
        if self.watcher.pending() or self._cycle_backlog():
            self.ticks.tick()

    def _cycle_backlog(self) -> bool:
        """Records a trigger wrote to a topic closing a cycle of sub-topologies (a foreign-key
        join's responses), which its reader takes in the next trigger."""
        return any(self.registry.version(topic) > self.committer.position(sub, topic) for topic, sub in self.planner.back_edges)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @stopping.setter
    def stopping(self, value: bool) -> None:
        if value:
            self._stop.set()
        else:
            self._stop.clear()

    def _wait_for_interval(self) -> None:
        """Start no trigger sooner than the commit interval after the previous one started.

        This, not Spark's processing-time trigger, keeps the interval: Spark's waits for the next
        multiple of the interval after a trigger *ends* (on average half an interval lost after
        every trigger that overran it, and a tick waits up to a whole interval). The query looks
        for ticks every quarter interval instead, and this wait spaces the triggers."""
        wait = self._last_start + self.commit_interval_s - time.monotonic()
        if wait > 0:
            self._stop.wait(wait)

    def run(self, latest: Mapping[str, int]) -> bool:
        """Run one trigger with input up to ``latest`` (per input topic; {}: only repartition
        backlog); returns whether anything ran."""
        started_at, started = time.time(), time.perf_counter()
        wall_ms = int(started_at * 1000)
        phases = Phases()
        with phases.time("plan"), self.commit_lock:
            idle = self.idle_clock.due(wall_ms) if self.idle_clock is not None else {}
            trigger = self.planner.plan(self.batches_run, latest, self.committer.position, idle, self.committed_runs)
        if trigger.empty:
            return False
        self.batches_run += 1
        with phases.time("tasks"):
            outcomes = self.job.run(trigger.plan)
        bad = [BadInputReport(**b) for o in outcomes for b in o.bad_input]
        if bad and self.stop_on_bad_input is not None:
            raise self.stop_on_bad_input(bad[0])  # nothing of this batch is committed
        job_seconds = time.perf_counter() - started
        with self.commit_lock:
            self._commit(trigger, outcomes, phases, started, started_at, job_seconds, wall_ms)
        return True

    def _committed(self, outcomes: list[TaskOutcome], wall_ms: int) -> None:
        """A sub-topology's batch committed (or had nothing to commit): its tasks' idle reports
        count now, never before (:mod:`deltastreams.streams._internal.runtime.idle`), and so do
        the runs their live operators hold."""
        for o in outcomes:
            if o.run is not None and not o.standby:
                self.committed_runs[(o.subtopology, o.partition)] = o.run
        if self.idle_clock is None:
            return
        for o in outcomes:
            if o.idle_checked:
                self.idle_clock.committed((o.subtopology, o.partition), wall_ms, processed=o.processed, advanced=o.idle_advanced, next_close_ms=o.next_close_ms)

    def _commit(
        self, trigger: TriggerPlan, outcomes: list[TaskOutcome], phases: Phases, started: float, started_at: float, job_seconds: float, wall_ms: int
    ) -> None:
        by_sub: dict[int, list[TaskOutcome]] = defaultdict(list)
        merged_for: dict[int, list[WrittenFile]] = defaultdict(list)
        staged: list[WrittenFile] = []
        for outcome in outcomes:
            by_sub[outcome.subtopology].append(outcome)
            for written in outcome.merged:
                merged_for[self.planner.writer_of[written.topic]].append(written)
            staged += [w for w in outcome.files if w.topic in self.planner.writer_of and w.topic not in self.planner.topology.cycle_topics]
        for sub in (sub for stage in trigger.plan.stages for sub in stage):
            mine = by_sub.get(sub.id, [])
            written = [w for o in mine for w in o.files if w.topic not in self.planner.writer_of or w.topic in self.planner.topology.cycle_topics] + merged_for.get(sub.id, [])
            sources = {t: (start, self.registry.version(t) if end is None else end) for t, (start, end) in trigger.sources[sub.id].items()}
            if not written and not any(moved(start, end) for start, end in sources.values()):
                self._committed(mine, wall_ms)
                continue
            try:
                published = self.committer.commit(sub.id, sources, written)
                if self.kafka_mirror is not None:
                    crash_point("before_kafka_publish")
                    self.kafka_mirror.publish(sub.id, self.committer.last[sub.id])
            except BatchTimedOutError as e:
                # This sub-topology and every later one (they read its uncommitted output) start
                # over from their committed positions, as after a crash; their files are orphans.
                log.warning("sub-topology %d batch %d: %s", sub.id, trigger.plan.batch_id, e)
                self.ticks.tick()
                break
            self._committed(mine, wall_ms)
            say_dead_lettered([BadInputReport(**b) for o in mine for b in o.bad_input], self.planner.settings.dead_letter_topic)
            sub_phases = Phases(phases)
            sub_phases.add(published.phases)
            task_phases = Phases()
            for outcome in mine:
                task_phases.add(outcome.phases)
            metrics = BatchMetrics(
                subtopology=sub.id,
                batch_id=trigger.plan.batch_id,
                tasks=len(mine),
                records_in=sum(o.processed for o in mine),
                records_out=sum(o.emitted for o in mine),
                dropped_late=sum(o.dropped_records for o in mine),
                dead_letters=sum(o.dead_letters for o in mine),
                restored_entries=sum(o.restored_entries for o in mine),
                process_seconds=job_seconds,
                commit_seconds=published.seconds,
                total_seconds=time.perf_counter() - started,
                phases=dict(sub_phases),
                task_phases=dict(task_phases),
                started_at=started_at,
                task_locations={o.partition: o.location for o in mine if o.location is not None},
                task_restored_entries={o.partition: o.restored_entries for o in mine if o.restored_entries},
                standby_entries=self.job.standby_entries,
                sink_timestamps=self._sink_timestamps(sub.id, written),
            )
            self.history.append(metrics)
            self.progress.batch_done(metrics)
        for topic, position in self._consumed_inputs().items():
            self.planner.inputs.forget(topic, position)
        if staged:  # merged into the batch's files (committed or abandoned): garbage now
            self._cleaner.submit(_delete_staged, [(self.registry.uri(w.topic), w.file.path) for w in staged])

    def _sink_timestamps(self, subtopology: int, written: list[WrittenFile]) -> tuple[int, int] | None:
        sinks = set(self.planner.topology.subtopology(subtopology).sink_topics) - set(self.planner.topology.internal_topics)
        stamped = [w.file for w in written if w.topic in sinks and w.file.num_records > 0 and w.file.min_timestamp >= 0]
        if not stamped:
            return None
        return min(f.min_timestamp for f in stamped), max(f.max_timestamp for f in stamped)

    def _consumed_inputs(self) -> dict[str, int]:
        return {t: self.consumed(t) for t in self.planner.inputs.uris}

    def consumed(self, topic: str):
        """Version of an input topic every sub-topology reading it has consumed (a Kafka topic:
        offsets per partition)."""
        positions = [self.committer.position(s.id, topic) for s in self.planner.topology.subtopologies if topic in s.source_topics]
        if self.planner.kafka is not None and topic in self.planner.kafka:
            return least(positions)
        return min(positions)

    def close(self) -> None:
        self._cleaner.shutdown(wait=True)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _delete_staged(files: list[tuple[str, str]]) -> None:
    for uri, path in files:
        delete_file(uri, path)
