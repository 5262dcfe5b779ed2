"""The driver's registry of every topic an application reads and writes.

Physical names (repartition topics get the application id as prefix), partition counts, layouts,
and where each partition ends (the next offset), kept in memory and advanced by each commit: every
topic the application writes has exactly one writer, this driver, so the registry is the truth.

Partition counts follow Kafka: a sub-topology has as many tasks as its largest source topic has
partitions; a repartition topic has ``num_partitions`` partitions (0: as many as the writing
sub-topology's tasks); sink topics the application creates, and changelogs, have as many
partitions as the writing sub-topology has tasks; the dead-letter topic has one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import CommitError, TopicNotFoundError, TopologyError
from deltastreams.sinks import DataFile, Topic, TopicLayout, checkpoint_interval, create_topic_with_layout, end_offsets, topic_uri
from deltastreams.sinks.retention import changelog_watermarks
from deltastreams.streams._internal.runtime.kafka_sources import KafkaSources
from deltastreams.streams._internal.runtime.plan import TopicTarget
from deltastreams.topology.graph import SubTopology, Topology
from deltastreams.topology.nodes import SinkNode
from deltastreams.topology.records import DEAD_LETTER_VALUE


@dataclass
class _Entry:
    logical: str
    physical: str
    partitions: int
    layout: TopicLayout | None
    key_column: str = "key"
    value_column: str = "value"
    next_offsets: list[int] = field(default_factory=list)
    table_id: str = ""
    table: object = None
    """The topic's DeltaTable, kept loaded and updated incrementally."""
    version: int = -1
    """The version this application last saw or wrote."""
    recent_files: dict[int, tuple[DataFile, ...]] = field(default_factory=dict)
    """Per partition, the files the last commit added (changelogs: spares tasks a log scan)."""
    watermarks: dict[int, int] = field(default_factory=dict)
    """Changelogs: per partition, the offset below which compaction may have dropped tombstones."""


class TopicRegistry:
    def __init__(self, config: StreamsConfig, topology: Topology, kafka: KafkaSources | None = None) -> None:
        self.config = config
        self.topology = topology
        self.root = config.root
        self.kafka = kafka
        """Input topics that live in Kafka: only their partition counts are kept here."""
        self._entries: dict[str, _Entry] = {}
        self.changelog_topics: set[str] = set()

    # -- partition counts ----------------------------------------------------------------------

    def tasks(self, sub: SubTopology, visiting: frozenset[int] = frozenset()) -> int:
        """One task per partition of its (co-partitioned) inputs; a global table's topic reads
        whole in every task, so its partitions do not count. An internal topic written by a
        sub-topology this one feeds (a foreign-key join's response topic) takes its partition
        count from the other inputs, as Kafka co-partitions it with them."""
        visiting = visiting | {sub.id}
        counts = [self.partitions(topic, visiting) for topic in sub.partitioned_topics if not self._written_by(topic, visiting)]
        if not counts:
            raise TopologyError(f"sub-topology {sub.id} reads only internal topics written in a cycle of sub-topologies: no partition count to take")
        return max(counts)

    def _written_by(self, logical: str, subs: frozenset[int]) -> bool:
        return logical in self.topology.internal_topics and any(s.id in subs and logical in s.sink_topics for s in self.topology.subtopologies)

    def partitions(self, logical: str, visiting: frozenset[int] = frozenset()) -> int:
        if logical in self._entries:
            return self._entries[logical].partitions
        if self.kafka is not None and logical in self.kafka:
            return self.kafka.partitions(logical)
        if logical in self.topology.copartitioned_topics:
            (reader,) = (s for s in self.topology.subtopologies if logical in s.source_topics)
            inputs = [t for t in reader.partitioned_topics if t not in self.topology.internal_topics]
            if inputs:
                return max(self.partitions(t, visiting) for t in inputs)
        if logical in self.topology.internal_topics:
            if self.config.num_partitions:
                return self.config.num_partitions
            writer = next(s for s in self.topology.subtopologies if logical in s.sink_topics)
            return self.tasks(writer, visiting)
        physical = self.physical(logical)
        if Topic.exists(self.root, physical):
            return Topic.open(self.root, physical).partitions
        writers = [s for s in self.topology.subtopologies if logical in s.sink_topics]
        if not writers:
            raise TopicNotFoundError(
                f"source topic '{logical}' does not exist under {self.root}/topics; create it (or generate data) first",
                topic=logical,
            )
        return self.tasks(writers[0])

    def physical(self, logical: str) -> str:
        return self.topology.physical_topic(self.config.application_id, logical)

    def uri(self, logical: str) -> str:
        return topic_uri(self.root, self.physical(logical))

    # -- registration -------------------------------------------------------------------------

    def register(self) -> None:
        """Every topic the application reads or writes, loaded in parallel: input topics (they
        must exist), sinks and repartition topics (created on first write, when their types are
        known), changelogs and the dead-letter topic (created now)."""
        in_kafka = self.kafka.topics if self.kafka is not None else {}
        jobs: list[tuple] = [(t, self.partitions(t), "key", "value", None) for t in self.topology.source_topics if t not in in_kafka]
        for sub in self.topology.subtopologies:
            for name in sub.nodes:
                node = self.topology.nodes[name]
                if isinstance(node, SinkNode):
                    jobs += [(topic, self.partitions(topic), node.key_column, node.value_column, None) for topic in node.topics]
            for store in sub.stores:
                layout = TopicLayout.of(partitions=self.tasks(sub), key_type=pa.binary(), value_type=pa.binary())
                jobs.append((self.changelog_topic(store), layout.partitions, "key", "value", layout))
                self.changelog_topics.add(self.changelog_topic(store))
        dlq = TopicLayout.of(partitions=1, key_type=pa.string(), value_type=DEAD_LETTER_VALUE)
        jobs.append((self.config.dlq_topic, 1, "key", "value", dlq))
        if self.config.late_records_topic:
            jobs.append((self.config.late_records_topic, 1, "key", "value", None))
        unique = {job[0]: job for job in jobs}
        with ThreadPoolExecutor(max_workers=8) as pool:
            for entry in pool.map(lambda job: self._register(*job), unique.values()):
                self._entries[entry.logical] = entry

    def changelog_topic(self, store: str) -> str:
        return self.topology.stores[store].changelog_topic(self.config.application_id)

    def _register(self, logical: str, partitions: int, key_column: str, value_column: str, layout: TopicLayout | None) -> _Entry:
        entry = _Entry(logical, self.physical(logical), partitions, None, key_column, value_column)
        if Topic.exists(self.root, entry.physical):
            self._load(entry)
        elif layout is not None:
            self._create(entry, layout)
        else:
            entry.next_offsets = [0] * partitions
        return entry

    def _create(self, entry: _Entry, layout: TopicLayout) -> None:
        create_topic_with_layout(self.root, entry.physical, layout, exist_ok=True, checkpoint_interval=self.config.retention.log_checkpoint_interval)
        self._load(entry)

    def _load(self, entry: _Entry) -> None:
        topic = Topic.open(self.root, entry.physical)
        table = topic.delta_table()
        entry.layout = topic.layout
        entry.partitions = topic.partitions
        entry.table_id = table.metadata().id
        entry.table = table
        entry.version = table.version()
        ends = end_offsets(table)
        entry.next_offsets = [ends.get(p, 0) for p in range(topic.partitions)]
        entry.watermarks = changelog_watermarks(table)

    def ensure_created(self, logical: str, layout: TopicLayout) -> None:
        entry = self._entries[logical]
        if entry.layout is None:
            self._create(entry, layout)

    # -- state ----------------------------------------------------------------------------------

    def exists(self, logical: str) -> bool:
        entry = self._entries.get(logical)
        return entry.layout is not None if entry is not None else Topic.exists(self.root, self.physical(logical))

    def layout(self, logical: str) -> TopicLayout | None:
        return self._entries[logical].layout

    def table_id(self, logical: str) -> str:
        return self._entries[logical].table_id

    def next_offsets(self, logical: str) -> list[int]:
        return list(self._entries[logical].next_offsets)

    def delta_table(self, logical: str):
        """The topic's table at its latest version; fails if someone else wrote it since this
        application last did: offsets were assigned from what this application knows."""
        entry = self._entries[logical]
        entry.table.update_incremental()
        if entry.table.version() != entry.version:
            raise CommitError(
                f"topic '{entry.physical}' is at version {entry.table.version()}, but this application last wrote "
                f"version {entry.version}: another process writes it. A topic written by a deltastreams application "
                "must have that application as its only writer."
            )
        return entry.table

    def checkpoint_interval(self, logical: str) -> int:
        """The topic's checkpoint interval, from its table as last loaded (a property that
        changes only by hand)."""
        return checkpoint_interval(self._entries[logical].table)

    def version(self, logical: str) -> int:
        """The version this application last saw or wrote (-1: the topic does not exist)."""
        entry = self._entries.get(logical)
        return entry.version if entry is not None else -1

    def committed(self, logical: str, version: int, files=()) -> None:
        """The application committed ``files`` as ``version`` of the topic."""
        entry = self._entries[logical]
        entry.version = version
        by_partition: dict[int, list[DataFile]] = {}
        for f in files:
            entry.next_offsets[f.partition] = max(entry.next_offsets[f.partition], f.max_offset + 1)
            by_partition.setdefault(f.partition, []).append(f)
        entry.recent_files.update({p: tuple(fs) for p, fs in by_partition.items()})

    def watermark(self, logical: str, partition: int) -> int:
        return self._entries[logical].watermarks.get(partition, 0)

    def set_watermarks(self, logical: str, watermarks) -> None:
        self._entries[logical].watermarks = dict(watermarks)

    def recent_files(self, logical: str, partition: int) -> tuple[DataFile, ...]:
        return self._entries[logical].recent_files.get(partition, ())

    def target(self, logical: str) -> TopicTarget:
        entry = self._entries[logical]
        return TopicTarget(
            logical=logical,
            physical=entry.physical,
            uri=topic_uri(self.root, entry.physical),
            partitions=entry.partitions,
            layout=entry.layout,
            key_column=entry.key_column,
            value_column=entry.value_column,
            next_offsets=tuple(entry.next_offsets),
            staged=logical in self.topology.internal_topics and logical not in self.topology.cycle_topics,
            transient=logical in self.topology.internal_topics or logical in self.changelog_topics,
        )

    def written_by(self, sub: SubTopology) -> list[str]:
        """Logical topics a sub-topology's tasks may write."""
        topics = list(sub.sink_topics)
        topics += [self.changelog_topic(s) for s in sub.stores]
        topics.append(self.config.dlq_topic)
        if self.config.late_records_topic and any(self.topology.nodes[n].stores for n in sub.nodes):
            topics.append(self.config.late_records_topic)
        return topics
