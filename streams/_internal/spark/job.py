"""The Spark job of one trigger: every running sub-topology's tasks, stage by stage.

Stage 0 holds the tasks of the sub-topologies that read only input topics; stage ``k`` those
whose repartition inputs come from stage ``k - 1`` or earlier. Between stages, a shuffle of file
descriptors (never records) hands each downstream task the staged files its partition received
from every upstream task; the downstream task merges them, writes the merged file, and processes
the records (:mod:`deltastreams.streams._internal.runtime.task`). A partition past the last task of each stage
carries the outcomes of earlier stages through to the driver. One job per trigger: Spark's fixed
cost per stage is paid once per sub-topology level, not once per sub-topology and commit.

Each Spark task hands its work to the task host of its deltastreams task on that machine
(:mod:`deltastreams.streams._internal.runtime.task_host`), which keeps the task's stores open between batches.
A sub-topology that starts with Spark Column steps reads its records through Catalyst in a job
of its own first; its staged outputs join the chain as if stage 0 had written them.

A small trigger (at most ``single_task_records`` input records) runs as one Spark task that
calls every task's host in stage order, a stage's hosts at the same time: each stage and shuffle
costs ~0.1-0.2 s of fixed Spark overhead here, far more than the work of a few thousand records,
and latency is what a small trigger is about. In local mode the driver calls the hosts itself
(no Spark task between them) for every trigger, whatever its size, once the hosts run (while
the session still starts, the driver starts them: :mod:`deltastreams.streams._internal.spark.session_start`):
on one machine a Spark task would only relay the calls.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import pyarrow as pa

from deltastreams.sinks import DataFile
from deltastreams.streams._internal.runtime import task_host
from deltastreams.streams._internal.runtime.plan import BatchPlan, SubtopologyPlan, TaskOutcome, TaskPlan
from deltastreams.streams._internal.spark.catalyst import apply_catalyst_steps
from deltastreams.streams._internal.spark.locality import Placement, executor_location, placed_rdd
from deltastreams.streams._internal.spark.session_start import SessionStart
from deltastreams.streams._internal.spark.source import STORAGE_OPTIONS
from deltastreams.topology.compile import CompiledSubtopology
from deltastreams.topology.graph import Topology

log = logging.getLogger("deltastreams")

FRESH, OUTCOME, TASK = "fresh", "outcome", "task"


def _single(plan: BatchPlan, sub: SubtopologyPlan) -> BatchPlan:
    """The plan as one task needs it: its own sub-topology only."""
    return BatchPlan(plan.batch_id, plan.settings, plan.shipped, ((sub,),))


def _run_on_host(plan: BatchPlan, task: TaskPlan, staged, records=None, *, idle_timeout_s: float, start: bool = True) -> TaskOutcome:
    settings = plan.settings
    name = task_host.host_name(settings.local_state_dir(), settings.application_id, task.task_id)
    sub = plan.subtopology(task.subtopology)
    request = ("run", (_single(plan, sub), task, dict(staged), records))
    reply = task_host.call(name, request, idle_timeout_s=idle_timeout_s, start=start)
    outcome = TaskOutcome.from_json(reply)
    outcome.location = executor_location()
    return outcome


def _standby_on_host(plan: BatchPlan, task: TaskPlan, *, idle_timeout_s: float) -> TaskOutcome:
    """A warm copy of ``task``'s stores on this executor, caught up with what is committed."""
    settings = plan.settings
    name = task_host.host_name(settings.local_state_dir(), settings.application_id, task.task_id)
    entries = task_host.call(name, ("standby", (settings, task.task_id, task.changelogs)), idle_timeout_s=idle_timeout_s)
    return TaskOutcome(task.subtopology, task.partition, restored_entries=entries, location=executor_location(), standby=True)


def _placed_task(plan: BatchPlan, targets: list[tuple[int, int, bool]], consumers, seeded, idle_timeout_s: float, index: int, items) -> Iterator[tuple]:
    """Partition ``index`` of a placed stage (:meth:`TriggerJob._run_placed`): one task, or one
    standby's catch-up."""
    for _ in items:  # the partition's index as text: consumed, so the Python worker is reused
        pass
    sub_id, partition, standby = targets[index]
    task = plan.subtopology(sub_id).tasks[partition]
    if standby:
        yield (OUTCOME,), _standby_on_host(plan, task, idle_timeout_s=idle_timeout_s).to_json()
        return
    staged = _staged(seeded.get((sub_id, partition), ()))
    if staged or _has_work(task):
        yield from _emit(_run_on_host(plan, task, staged, idle_timeout_s=idle_timeout_s), consumers)


def _emit(outcome: TaskOutcome, consumers: Mapping[str, int]) -> Iterator[tuple]:
    yield (OUTCOME,), outcome.to_json()
    for written in outcome.files:
        if written.topic in consumers:  # a staged repartition file: for the consumer's task
            yield (FRESH, consumers[written.topic], written.file.partition), (written.topic, written.writer, asdict(written.file))


def _stage_task(plan: BatchPlan, targets: list[tuple[int, int]], consumers, seeded, idle_timeout_s: float, index: int, items) -> Iterator[tuple]:
    if index == len(targets):  # the carry partition: outcomes (and anything for later stages) pass
        yield from items
        return
    sub_id, partition = targets[index]
    staged = _staged(seeded.get((sub_id, partition), ()))
    for key, value in items:
        if key[0] == FRESH and (key[1], key[2]) == (sub_id, partition):
            topic, writer, file = value
            staged[topic].append((writer, DataFile(**file)))
        elif key[0] != TASK:
            yield key, value
    task = plan.subtopology(sub_id).tasks[partition]
    if not staged and not _has_work(task):
        return
    yield from _emit(_run_on_host(plan, task, staged, idle_timeout_s=idle_timeout_s), consumers)


def _all_tasks(plan: BatchPlan, consumers, seeded, idle_timeout_s: float, items, *, start: bool = True) -> Iterator[tuple]:
    """Every task of the plan, stage after stage, in this one Spark task (or in the driver:
    ``start`` false, see :meth:`TriggerJob._run_in_driver`)."""
    # Read the (empty) input to its end first: PySpark returns a Python worker to its pool only
    # when the task consumed all its input. Otherwise every trigger forked a fresh worker that
    # imported everything again: ~0.3 s for an empty job here, ~0.8 s a trigger in the soak.
    for _ in items:
        pass
    fresh: dict[tuple[int, int], list] = defaultdict(list, {k: list(v) for k, v in seeded.items()})
    for stage in plan.stages:
        work = []
        for sub in stage:
            for task in sub.tasks:
                staged = _staged(fresh.pop((sub.id, task.partition), ()))
                if staged or _has_work(task):
                    work.append((task, staged))
        for outcome in _run_together(plan, work, idle_timeout_s, start):
            for key, value in _emit(outcome, consumers):
                if key[0] == FRESH:
                    fresh[(key[1], key[2])].append(value)
                else:
                    yield key, value


def _run_together(plan: BatchPlan, work: list, idle_timeout_s: float, start: bool) -> list[TaskOutcome]:
    """One stage's tasks, each in its own host at the same time (they share nothing; waiting on
    a host holds no core), their outcomes in the stage's task order."""
    run = functools.partial(_run_staged_task, plan, idle_timeout_s, start)
    if len(work) <= 1:
        return [run(item) for item in work]
    with ThreadPoolExecutor(max_workers=len(work), thread_name_prefix="deltastreams-stage") as pool:
        return list(pool.map(run, work))


def _run_staged_task(plan: BatchPlan, idle_timeout_s: float, start: bool, item) -> TaskOutcome:
    task, staged = item
    return _run_on_host(plan, task, staged, idle_timeout_s=idle_timeout_s, start=start)


def _staged(items) -> dict[str, list[tuple[int, DataFile]]]:
    """Per repartition topic, the (writer, staged file) pairs of ``(topic, writer, file)`` items."""
    staged: dict[str, list[tuple[int, DataFile]]] = defaultdict(list)
    for topic, writer, file in items:
        staged[topic].append((writer, DataFile(**file)))
    return staged


def _has_work(task: TaskPlan) -> bool:
    """Input files to read, or an idle advance to make (idle close)."""
    return bool(task.inputs) or bool(task.kafka_inputs) or task.idle_advance_ms is not None


def _idle_task(plan: BatchPlan, idle_timeout_s: float, task: TaskPlan) -> str:
    return _run_on_host(plan, task, {}, idle_timeout_s=idle_timeout_s).to_json()


def _records_task(plan: BatchPlan, sub_id: int, topic: str, idle_timeout_s: float, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_batches(list(batches))
    if table.num_rows == 0:
        return
    task = plan.subtopology(sub_id).tasks[table.column("partition")[0].as_py()]
    outcome = _run_on_host(plan, task, {}, {topic: table}, idle_timeout_s=idle_timeout_s)
    yield pa.RecordBatch.from_pydict({"outcome": [outcome.to_json()]})


class TriggerJob:
    """Builds and runs the Spark job(s) of one trigger plan."""

    def __init__(
        self,
        spark,
        topology: Topology,
        compiled: Mapping[int, CompiledSubtopology],
        consumers: Mapping[str, int],
        idle_timeout_s: float,
        single_task_records: int,
        *,
        sticky_tasks: bool = True,
        standby_replicas: int = 0,
    ) -> None:
        self._session = spark if isinstance(spark, SessionStart) else SessionStart.given(spark)
        self.topology = topology
        """With the Spark Column functions (the driver's own copy)."""
        self.compiled = compiled
        self.consumers = dict(consumers)
        """Repartition topic -> the sub-topology that reads it."""
        self.idle_timeout_s = idle_timeout_s
        self.single_task_records = single_task_records
        self.in_driver = self._session.local
        """Local mode: a small trigger's tasks may be called from the driver (same machine)."""
        self.placement = Placement(standby_replicas) if sticky_tasks and not self.in_driver else None
        """On a cluster: where each task's stores are current (:mod:`deltastreams.streams._internal.spark.locality`)."""
        self.standby_entries = 0
        """Changelog entries the standby copies applied during the last trigger."""
        self.start_hosts_here: Callable[[list[str]], None] | None = None
        """Set when the driver started the task hosts itself (local mode, while the session
        started): how it starts one that is found missing."""

    @property
    def _before_session(self) -> bool:
        """The driver runs triggers on hosts it started while the session still starts: then a big
        trigger too is the driver's (the hosts do the work either way in local mode, a stage's at
        the same time), rather than wait for Spark to relay it."""
        return self.start_hosts_here is not None and not self._session.ready()

    @property
    def _driver_runs_big_triggers(self) -> bool:
        """Local mode: the driver calls the hosts for a trigger of any size, as it does while the
        session starts. A stage's Spark tasks would only relay the same calls on this machine,
        and each stage and shuffle cost ~0.1 s more than the calls themselves: at 5M events
        from Kafka at 100 ms, the query's triggers of 100k records came every 280-340 ms against
        110-120 ms for the driver's own. ``single_task_records`` 0 keeps a Spark task per
        deltastreams task here too (how tests run the stage path locally)."""
        return self.in_driver and self.single_task_records > 0

    @property
    def spark(self):
        """The session (waited for if it is still starting: only what needs Spark asks)."""
        return self._session.get()

    def run(self, plan: BatchPlan) -> list[TaskOutcome]:
        outcomes: list[TaskOutcome] = []
        seeded: dict[tuple[int, int], list] = defaultdict(list)
        for stage in plan.stages:
            for sub in stage:
                if self.compiled[sub.id].mode == "records":
                    for outcome in self._run_records_mode(plan, sub):
                        outcomes.append(outcome)
                        for key, value in list(_emit(outcome, self.consumers))[1:]:
                            seeded[(key[1], key[2])].append(value)
        if self.placement is not None:
            outcomes += self._run_placed(plan, seeded)
            self.placement.record(outcomes)
            return outcomes
        descriptor_subs = [sub for stage in plan.stages for sub in stage if self.compiled[sub.id].mode == "descriptors"]
        one_task = _input_records(descriptor_subs) <= self.single_task_records or self._before_session
        if descriptor_subs and (one_task or self._driver_runs_big_triggers):
            run_all = functools.partial(_all_tasks, _without_records_mode(plan, self.compiled), self.consumers, dict(seeded), self.idle_timeout_s)
            items = self._run_in_driver(run_all)
            if items is None and one_task:
                items = self.spark.sparkContext.parallelize([None], 1).mapPartitions(run_all).collect()
            if items is not None:
                return outcomes + [TaskOutcome.from_json(value) for key, value in items if key[0] == OUTCOME]
        sc = self.spark.sparkContext
        rdd = None
        for stage in plan.stages:
            targets = [(sub.id, t.partition) for sub in stage if self.compiled[sub.id].mode == "descriptors" for t in sub.tasks]
            if not targets:
                continue
            run_stage = functools.partial(_stage_task, plan, targets, self.consumers, dict(seeded), self.idle_timeout_s)
            if rdd is None:
                rdd = sc.parallelize([((TASK, s, p), None) for s, p in targets], len(targets))
                rdd = rdd.mapPartitionsWithIndex(run_stage)
            else:
                index = {(FRESH, s, p): i for i, (s, p) in enumerate(targets)}
                carry = len(targets)
                rdd = rdd.partitionBy(carry + 1, functools.partial(_partition_of, index, carry)).mapPartitionsWithIndex(run_stage)
        if rdd is not None:
            outcomes += [TaskOutcome.from_json(value) for key, value in rdd.collect() if key[0] == OUTCOME]
        return outcomes

    def _run_placed(self, plan: BatchPlan, seeded: dict[tuple[int, int], list]) -> list[TaskOutcome]:
        """The descriptor-mode stages on a cluster, each a Spark job whose partitions prefer the
        executor holding their task's current stores.

        A job per stage, not one job with a shuffle between stages: a shuffle's partitions go
        where its map outputs are, never where a store is. The fresh files a stage staged reach
        the next one through the driver (descriptors only, a few hundred bytes a task). Never
        one Spark task for a small trigger either: that would gather every store on one host.
        Standby copies catch up in the first stage's job, beside the tasks (they need nothing
        from this trigger: they apply what earlier ones committed)."""
        placement = self.placement
        assert placement is not None
        alive = _alive_executors(self.spark.sparkContext)
        placement.retain({executor_id for executor_id, _ in alive})
        placement.balance(
            [t.task_id for stage in plan.stages for sub in stage if self.compiled[sub.id].mode == "descriptors" for t in sub.tasks],
            [location for _, location in alive],
        )
        outcomes: list[TaskOutcome] = []
        self.standby_entries = 0
        first = True
        for stage in plan.stages:
            targets = [(sub.id, t.partition, False) for sub in stage if self.compiled[sub.id].mode == "descriptors" for t in sub.tasks]
            if first and placement.standby_replicas:
                targets += [
                    (sub.id, t.partition, True)
                    for stage_ in plan.stages for sub in stage_ if self.compiled[sub.id].mode == "descriptors"
                    for t in sub.tasks if t.changelogs
                    for _ in placement.standbys(t.task_id)
                ]  # fmt: skip
            if not targets:
                continue
            locations = self._locations(targets)
            run = functools.partial(_placed_task, plan, targets, self.consumers, dict(seeded), self.idle_timeout_s)
            for key, value in placed_rdd(self.spark.sparkContext, locations).mapPartitionsWithIndex(run).collect():
                if key[0] == OUTCOME:
                    outcome = TaskOutcome.from_json(value)
                    if outcome.standby:
                        self.standby_entries += outcome.restored_entries
                        placement.record([outcome])
                    else:
                        outcomes.append(outcome)
                else:
                    seeded[(key[1], key[2])].append(value)
            first = False
        return outcomes

    def _locations(self, targets: list[tuple[int, int, bool]]) -> list[list[str]]:
        placement = self.placement
        assert placement is not None
        locations = []
        standbys_taken: dict[str, int] = defaultdict(int)
        for sub_id, partition, standby in targets:
            task = f"{sub_id}_{partition}"
            if standby:
                locations.append(placement.standbys(task)[standbys_taken[task]:][:1])
                standbys_taken[task] += 1
            else:
                locations.append(placement.place(task))
        return locations

    def _run_in_driver(self, run_all) -> list[tuple] | None:
        """A trigger's items, from the task hosts called by the driver itself; None if that
        cannot be done (not local mode, or a host not running: only a Spark task starts one,
        unless the driver started the hosts).

        In local mode a small trigger's single Spark task runs on this machine and only relays
        calls to the task hosts; the relay (job submission, a Python worker, the result's way
        back) costs ~70 ms here, more than a few thousand records' work, and a big trigger's
        stages and shuffle more (:attr:`_driver_runs_big_triggers`). A host found gone
        midway leaves the trigger to Spark (one task, or a big trigger's stages), which runs
        every task again: a task's stores move only once its changelog is committed, so a batch
        runs again as after any failed Spark task. So does a task that failed on its host: a failure is reported (and
        retried) as Spark reports any task's, whether or not the driver called the host first."""
        if not self.in_driver:
            return None
        try:
            try:
                return list(run_all(iter(()), start=False))
            except task_host.HostNotRunning as e:
                if self.start_hosts_here is None:
                    raise
                # The driver started the hosts (while the session started): it starts a missing
                # one again (an earlier instance's, found alive at start, may have ended since)
                # rather than wait for Spark.
                self.start_hosts_here([str(e)])
                return list(run_all(iter(()), start=False))
        except task_host.HostNotRunning as e:
            log.debug("batch through a Spark task: task host %s is not running here", e)
            return None
        except task_host.TaskHostError:
            log.debug("batch through a Spark task: a task failed on its host when the driver called it", exc_info=True)
            return None

    def _run_records_mode(self, plan: BatchPlan, sub: SubtopologyPlan) -> list[TaskOutcome]:
        compiled = self.compiled[sub.id]
        (topic,) = compiled.source_topics
        slices = []
        uri = None
        for task in sub.tasks:
            for source in task.inputs:
                uri = source.uri
                slices.append([task.partition, [[f.path, f.partition, f.num_records, f.min_offset, f.max_offset] for f in source.files]])
        outcomes = []
        # Idle close: tasks with no records but an idle advance to make never reach the records
        # job (it has no partition for them); they run on their hosts directly.
        idle = [t for t in sub.tasks if not t.inputs and t.idle_advance_ms is not None]
        if idle:
            run_idle = functools.partial(_idle_task, plan, self.idle_timeout_s)
            outcomes += [TaskOutcome.from_json(o) for o in self.spark.sparkContext.parallelize(idle, len(idle)).map(run_idle).collect()]
        if not slices:
            return outcomes
        frame = (
            self.spark.read.format("deltastreams")
            .option("uri", uri)
            .option("slices", json.dumps(slices))
            .option(STORAGE_OPTIONS, json.dumps(dict(plan.settings.storage_options)))
            .load()
        )
        frame = apply_catalyst_steps(compiled, self.topology, frame)
        task_fn = functools.partial(_records_task, plan, sub.id, topic, self.idle_timeout_s)
        return outcomes + [TaskOutcome.from_json(row.outcome) for row in frame.mapInArrow(task_fn, "outcome string").collect()]


def _alive_executors(sc) -> list[tuple[str, str]]:
    """(id, ``executor_<host>_<id>``) of each executor the driver knows alive, in id order (a
    lost host's are gone; one that just joined is there before it ran anything)."""
    summaries = sc._jvm.scala.jdk.javaapi.CollectionConverters.asJava(sc._jsc.sc().statusStore().executorList(True))
    alive = [(e.id(), e.hostPort().rsplit(":", 1)[0]) for e in summaries if e.id() != "driver"]
    return sorted(((i, f"executor_{host}_{i}") for i, host in alive), key=lambda item: (len(item[0]), item[0]))


def _input_records(subs) -> int:
    delta = sum(max(f.num_records, 0) for sub in subs for task in sub.tasks for source in task.inputs for f in source.files)
    return delta + sum(read.end - read.start for sub in subs for task in sub.tasks for read in task.kafka_inputs)


def _without_records_mode(plan: BatchPlan, compiled: Mapping[int, CompiledSubtopology]) -> BatchPlan:
    stages = tuple(stage for stage in (tuple(s for s in st if compiled[s.id].mode == "descriptors") for st in plan.stages) if stage)
    return BatchPlan(plan.batch_id, plan.settings, plan.shipped, stages)


def _partition_of(index: Mapping[tuple, int], carry: int, key: tuple) -> int:
    return index.get(key, carry)
