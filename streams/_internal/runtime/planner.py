"""Plan a trigger on the driver: which sub-topologies run, which files every task reads, where
every output ends.

A sub-topology runs in a trigger when it has committed input it has not consumed (new versions of
an input topic, as many as fit in one batch, or a repartition topic's backlog, left by a crash
between two sub-topologies' commits) or when a sub-topology upstream of it runs (its fresh
repartition records are merged and processed in the same trigger). Sub-topologies are grouped in
stages by their depth in the graph of repartition topics: a stage's tasks take fresh records only
from earlier stages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from deltastreams.sinks import DataFile, RejectedFile, files_added
from deltastreams.state import ChangelogPosition
from deltastreams.streams._internal.runtime.inputs import InputLog, InputRange
from deltastreams.streams._internal.runtime.kafka_sources import KafkaSources, moved
from deltastreams.streams._internal.runtime.plan import BatchPlan, BatchSettings, InputFiles, KafkaRead, ShippedTopology, SubtopologyPlan, TaskPlan
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.topology.graph import SubTopology, Topology


@dataclass
class TriggerPlan:
    plan: BatchPlan
    sources: dict[int, dict[str, tuple[int, int | None]]] = field(default_factory=dict)
    """Per running sub-topology, per input topic: versions ``(start, end]`` it consumes; ``end``
    None for a repartition topic its upstream writes in this trigger (known once published)."""

    @property
    def empty(self) -> bool:
        return not self.plan.stages


class Planner:
    def __init__(
        self,
        topology: Topology,
        registry: TopicRegistry,
        inputs: InputLog,
        settings: BatchSettings,
        shipped: ShippedTopology,
        entries: Mapping[int, str | None],
        kafka: KafkaSources | None = None,
    ) -> None:
        self.topology = topology
        self.kafka = kafka
        """The input topics that live in Kafka (positions are offsets per partition)."""
        self.inputs = inputs
        self.registry = registry
        self.settings = settings
        self.shipped = shipped
        self.entries = entries
        """Per sub-topology, the end of its Catalyst prefix (records mode), or None."""
        internal = topology.internal_topics
        self.writer_of = {t: s.id for s in topology.subtopologies for t in s.sink_topics if t in internal}
        self.levels = topology.levels
        self.back_edges = tuple(
            (topic, sub.id) for sub in topology.subtopologies for topic in sub.source_topics if topic in topology.cycle_topics
        )
        """``(topic, reader)`` for the internal topics closing a cycle of sub-topologies: their
        records wait for the next trigger, which must come even without new input."""

    def plan(
        self,
        batch_id: int,
        latest: Mapping[str, int],
        positions,
        idle: Mapping[tuple[int, int], int] | None = None,
        committed_runs: Mapping[tuple[int, int], str] | None = None,
    ) -> TriggerPlan:
        """``latest``: per input topic, its latest version (absent: take no new input from it).
        ``positions(sub, topic)``: where a sub-topology's committed input ends. ``idle``: per
        task ``(sub-topology, partition)`` due for an idle advance, how far (a sub-topology runs
        for them even without input; :mod:`deltastreams.streams._internal.runtime.idle`).
        ``committed_runs``: per task, the run id of its last committed outcome (the task host
        reuses the task's live operators only if they hold it)."""
        idle = idle or {}
        committed_runs = committed_runs or {}
        running: set[int] = set()
        trigger = TriggerPlan(BatchPlan(batch_id, self.settings, self.shipped, ()))
        subs_by_level = sorted(self.topology.subtopologies, key=lambda s: (self.levels[s.id], s.id))
        inputs: dict[int, dict[str, InputRange]] = {}
        for sub in subs_by_level:
            sources: dict[str, tuple] = {}
            files: dict[str, InputRange] = {}
            for topic in sub.source_topics:
                start = positions(sub.id, topic)
                if self.kafka is not None and topic in self.kafka:  # offsets per partition
                    if topic in latest:
                        start = self.kafka.start(topic, start, self.kafka.bounds(topic))
                        end = self.kafka.end(start, latest[topic], self.inputs.max_records)
                        if moved(start, end):
                            sources[topic] = (start, end)
                    continue
                if topic in sub.global_topics:  # a global table: everything, before the streams
                    end = latest.get(topic, start)
                    added = files_added(self.registry.uri(topic), start, end) if end > start else []
                    if added:
                        files[topic] = InputRange(end, added)
                elif topic not in self.writer_of:  # an input topic: whole versions, bounded
                    taken = self.inputs.bounded(topic, start, latest.get(topic, start))
                    end = taken.end
                    if taken.files or taken.rejected:
                        files[topic] = taken
                else:  # a repartition topic: its backlog, then fresh records if its upstream runs
                    committed = self.registry.version(topic)
                    end = None if self.writer_of[topic] in running else committed
                    if committed > start:
                        files[topic] = InputRange(committed, files_added(self.registry.uri(topic), start, committed))
                if end is None or end > start:
                    sources[topic] = (start, end)
            if sources or any(task[0] == sub.id for task in idle):
                running.add(sub.id)
                trigger.sources[sub.id] = sources
                inputs[sub.id] = files
        stages: dict[int, list[SubtopologyPlan]] = {}
        for sub in subs_by_level:
            if sub.id in running:
                stages.setdefault(self.levels[sub.id], []).append(self._subtopology_plan(sub, trigger.sources[sub.id], inputs[sub.id], idle, committed_runs))
        trigger.plan = BatchPlan(batch_id, self.settings, self.shipped, tuple(tuple(stages[level]) for level in sorted(stages)))
        return trigger

    def _subtopology_plan(
        self,
        sub: SubTopology,
        sources: Mapping[str, tuple[int, int | None]],
        files: Mapping[str, InputRange],
        idle: Mapping[tuple[int, int], int],
        committed_runs: Mapping[tuple[int, int], str],
    ) -> SubtopologyPlan:
        registry = self.registry
        fresh = tuple(t for t, (_, end) in sources.items() if end is None)
        kafka = {t: r for t, r in sources.items() if self.kafka is not None and t in self.kafka}
        changelogs = {store: registry.changelog_topic(store) for store in sub.stores}
        tasks = []
        for partition in range(registry.tasks(sub)):
            task_inputs = tuple(
                _task_input(topic, registry.uri(topic), registry.layout(topic), taken, partition, whole=topic in sub.global_topics)
                for topic, taken in files.items()
                if topic in sub.global_topics or any(f.partition == partition for f in taken.files) or any(_reader_of(r) == partition for r in taken.rejected)
            )
            positions = {
                store: ChangelogPosition(
                    registry.uri(topic),
                    registry.table_id(topic),
                    partition,
                    registry.next_offsets(topic)[partition],
                    registry.recent_files(topic, partition),
                    registry.watermark(topic, partition),
                )
                for store, topic in changelogs.items()
            }
            kafka_inputs = tuple(
                KafkaRead(topic, self.kafka.topics[topic], partition, start[partition], end[partition])
                for topic, (start, end) in kafka.items()
                if end.get(partition, 0) > start.get(partition, 0)
            )
            tasks.append(
                TaskPlan(
                    sub.id, partition, task_inputs, kafka_inputs, fresh, positions,
                    idle_advance_ms=idle.get((sub.id, partition)), committed_run=committed_runs.get((sub.id, partition)),
                )
            )
        return SubtopologyPlan(
            id=sub.id,
            tasks=tuple(tasks),
            outputs={t: registry.target(t) for t in registry.written_by(sub)},
            merges={t: registry.target(t) for t in fresh},
            changelogs=changelogs,
            entry=self.entries.get(sub.id),
        )


def _reader_of(rejected: RejectedFile) -> int:
    """The task that dead-letters a rejected file: its partition's, partition 0's if it has none."""
    return rejected.partition if rejected.partition is not None else 0


def _task_input(topic: str, uri: str, layout, taken: InputRange, partition: int, *, whole: bool) -> InputFiles:
    """What one task reads of ``taken``: its partition's files (all of them for a global table)
    with their versions, and the rejected files it dead-letters."""
    chosen = [(f, v) for f, v in zip(taken.files, taken.versions or [None] * len(taken.files), strict=True) if whole or f.partition == partition]
    return InputFiles(
        topic, uri, layout, tuple(f for f, _ in chosen), tuple(v for _, v in chosen),
        tuple(r for r in taken.rejected if _reader_of(r) == partition), taken.checked,
    )  # fmt: skip
