"""Sticky tasks: which executor holds each task's current stores, and Spark partitions that ask
to run there.

A task's stores are current on the executor that ran its last batch: there, a batch promotes
the previous batch's changes and reads nothing back; on any other executor it reads the
changelog's tail, and on a host that never ran the task, all of it (:mod:`deltastreams.state.task_stores`).
Spark hands a partition with no preferred location to whichever executor is free, so on a
cluster of N hosts a task would land away from its stores about (N-1)/N of the time.

Each Spark task reports where it ran (:func:`executor_location`); the driver keeps the last
place of every task (:class:`Placement`) and builds each stage's partitions with that place as
their preferred location (:func:`placed_rdd`). The fallback is Spark's own delay scheduling: a
partition waits up to ``spark.locality.wait`` (3 s by default) for its executor to be free and
then runs anywhere; if that executor is gone, it runs anywhere at once.

Standby copies (Kafka Streams' ``num.standby.replicas``): :meth:`Placement.standbys` names, per
task, other executors that keep a warm copy of its stores, chosen once and kept.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Iterable, Sequence

from deltastreams.streams._internal.runtime.plan import TaskOutcome
from deltastreams.streams._internal.runtime.task_host import executor_pid

log = logging.getLogger("deltastreams")


@functools.cache
def executor_location() -> str | None:
    """Spark's name for the executor this Python worker serves (``executor_<host>_<id>``, a
    location its scheduler honours at the executor's own level), or None where there is only
    one (local mode: the driver's JVM has no executor arguments).

    Read from the executor JVM's command line: CoarseGrainedExecutorBackend is started with
    ``--executor-id`` and ``--hostname`` by every cluster manager (standalone, YARN, Kubernetes),
    and PySpark gives a Python worker neither."""
    try:
        with open(f"/proc/{executor_pid()}/cmdline", "rb") as f:
            arguments = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    values = {name: arguments[i + 1] for i, name in enumerate(arguments[:-1]) if name in ("--executor-id", "--hostname")}
    if len(values) < 2:
        return None
    return f"executor_{values['--hostname']}_{values['--executor-id']}"


def task_id(outcome: TaskOutcome) -> str:
    return f"{outcome.subtopology}_{outcome.partition}"


class Placement:
    """The driver's record of where each task last ran, and of its standby executors."""

    def __init__(self, standby_replicas: int = 0) -> None:
        self.standby_replicas = standby_replicas
        self._last: dict[str, str] = {}
        self._standbys: dict[str, list[str]] = {}
        self._planned: dict[str, str] = {}
        """Task -> where :meth:`balance` sends it this trigger (away from its last executor)."""
        self._executors: dict[str, None] = {}
        """Every executor seen so far, in the order first seen (insertion-ordered set)."""

    def record(self, outcomes: Iterable[TaskOutcome]) -> None:
        for outcome in outcomes:
            if outcome.location is None:
                continue
            self._executors.setdefault(outcome.location)
            if outcome.standby:
                continue
            task = task_id(outcome)
            last = self._last.get(task)
            if last is not None and last != outcome.location:
                log.info(
                    "task %s ran on %s, away from its last executor %s: it read %d changelog entries back",
                    task, outcome.location, last, outcome.restored_entries,
                )  # fmt: skip
            self._last[task] = outcome.location
            if outcome.location in self._standbys.get(task, ()):  # the standby took over: pick another
                self._standbys[task].remove(outcome.location)

    def preferred(self, task: str) -> list[str]:
        """Where the task should run: its last executor, else its first standby (warm), else
        anywhere."""
        if task in self._last:
            return [self._last[task]]
        return self._standbys.get(task, [])[:1]

    def balance(self, tasks: Sequence[str], executors: Sequence[str]) -> None:
        """Spread each sub-topology's ``tasks`` over ``executors`` (the live ones), at most
        ``ceil(tasks / executors)`` a executor, moving as few as possible: a task stays where it
        last ran unless its executor holds more than its share; a task to move goes to its
        standby if that one has room, else to the executor with the fewest. Like Kafka Streams'
        sticky assignor, which keeps tasks in place but balanced: without it, an executor that
        joined (or started late) would never get a task, every task waiting for its old one.
        A moved task reads its changelog back once (its standby's tail only), then stays."""
        if not executors:
            return
        # Spark's name of an executor that has run tasks is the one it reported (same id)
        known = {location.rsplit("_", 1)[1]: location for location in self._executors}
        executors = [known.get(location.rsplit("_", 1)[1], location) for location in executors]
        by_sub: dict[str, list[str]] = {}
        for task in tasks:
            by_sub.setdefault(task.split("_", 1)[0], []).append(task)
        for group in by_sub.values():
            share = -(-len(group) // len(executors))
            load = dict.fromkeys(executors, 0)
            to_move = []
            for task in sorted(group):
                where = self._last.get(task)
                if where in load and load[where] < share:
                    load[where] += 1
                else:
                    to_move.append(task)
            for task in to_move:
                standby = next((s for s in self._standbys.get(task, []) if s in load and load[s] < share), None)
                target = standby or min(load, key=lambda e: (load[e], executors.index(e)))
                load[target] += 1
                self._planned[task] = target

    def place(self, task: str) -> list[str]:
        """Where to ask Spark to run ``task`` this trigger (after :meth:`balance`)."""
        planned = self._planned.pop(task, None)
        return [planned] if planned is not None else self.preferred(task)

    def retain(self, alive_ids: Collection[str]) -> None:
        """Forget the executors Spark no longer has (``alive_ids``: executor ids): a task whose
        executor is gone prefers its warm standby, not a place that no longer exists."""
        gone = [e for e in self._executors if e.rsplit("_", 1)[1] not in alive_ids]
        for location in gone:
            del self._executors[location]
            for task in [t for t, where in self._last.items() if where == location]:
                del self._last[task]
            for standbys in self._standbys.values():
                if location in standbys:
                    standbys.remove(location)

    def standbys(self, task: str) -> list[str]:
        """The executors that keep a warm copy of ``task``'s stores: ``standby_replicas`` of the
        known executors other than its active one, spread over them by the task's position and
        kept once chosen (a copy is worth something only if it stays where it is)."""
        active = self._last.get(task)
        if not self.standby_replicas or active is None:
            return []
        chosen = [s for s in self._standbys.get(task, []) if s != active and s in self._executors]
        others = [e for e in self._executors if e != active and e not in chosen]
        if others and len(chosen) < self.standby_replicas:
            start = sum(map(ord, task)) % len(others)
            others = others[start:] + others[:start]
            chosen += others[: self.standby_replicas - len(chosen)]
        self._standbys[task] = chosen
        return list(chosen)


def placed_rdd(sc, preferred: Sequence[Sequence[str]]):
    """An RDD of ``len(preferred)`` partitions, partition ``i`` holding the text ``str(i)`` and
    preferring the locations ``preferred[i]`` (none: anywhere).

    PySpark's ``parallelize`` cannot say where a partition should run; Scala's ``makeRDD`` can.
    Its strings reach Python as UTF-8 text, as ``textFile``'s do."""
    from pyspark.rdd import RDD
    from pyspark.serializers import UTF8Deserializer

    jvm = sc._jvm
    to_scala = jvm.scala.jdk.javaapi.CollectionConverters.asScala
    items = jvm.java.util.ArrayList()
    for index, locations in enumerate(preferred):
        hosts = jvm.java.util.ArrayList()
        for location in locations:
            hosts.add(location)
        items.add(jvm.scala.Tuple2(str(index), to_scala(hosts).toSeq()))
    string_tag = jvm.scala.reflect.ClassTag.apply(jvm.java.lang.Class.forName("java.lang.String"))
    rdd = sc._jsc.sc().makeRDD(to_scala(items).toSeq(), string_tag)
    return RDD(rdd.toJavaRDD(), sc, UTF8Deserializer())
