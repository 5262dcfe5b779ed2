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

import threading
from dataclasses import dataclass, field

import pyarrow as pa

from conf import StreamsConfig
from sinks._internal import delta_log
from sinks.topics import Topic, TopicLayout, create_topic_with_layout, topic_uri
from streams._internal.processing.task import DEAD_LETTER_VALUE
from streams._internal.runtime.batch import TopicTarget
from conf.errors import CommitError, TopicNotFoundError
from topology.graph import SubTopology, Topology
from topology.nodes import SinkNode

CHANGELOG_LAYOUT_TYPES = (pa.binary(), pa.binary())


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
    lock: threading.Lock = field(default_factory=threading.Lock)
    table: object = None
    """The topic's DeltaTable, kept loaded and updated incrementally."""
    version: int = -1
    """The version this application last saw or wrote."""


class TopicRegistry:
    def __init__(self, config: StreamsConfig, topology: Topology) -> None:
        self.config = config
        self.topology = topology
        self.root = config.root
        self._entries: dict[str, _Entry] = {}
        self._guard = threading.Lock()
        self.changelog_topics: set[str] = set()

    # -- partition counts ----------------------------------------------------------------------

    def tasks(self, sub: SubTopology) -> int:
        return max(self.partitions(topic) for topic in sub.source_topics)

    def partitions(self, logical: str) -> int:
        if logical in self._entries:
            return self._entries[logical].partitions
        if logical in self.topology.internal_topics:
            if self.config.num_partitions:
                return self.config.num_partitions
            writer = next(s for s in self.topology.subtopologies if logical in s.sink_topics)
            return self.tasks(writer)
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

    def register_outputs(self) -> None:
        """Every topic the application writes: sinks and repartition topics (created on first
        write, when their types are known), changelogs and the dead-letter topic (created now)."""
        for sub in self.topology.subtopologies:
            for name in sub.nodes:
                node = self.topology.nodes[name]
                if isinstance(node, SinkNode):
                    self._register(node.topic, self.partitions(node.topic), node.key_column, node.value_column)
            for store in sub.stores:
                layout = TopicLayout.of(partitions=self.tasks(sub), key_type=pa.binary(), value_type=pa.binary())
                self._register(self.changelog_topic(store), layout.partitions, layout=layout)
                self.changelog_topics.add(self.changelog_topic(store))
        dlq = TopicLayout.of(partitions=1, key_type=pa.string(), value_type=DEAD_LETTER_VALUE)
        self._register(self.config.dlq_topic, 1, layout=dlq)
        if self.config.late_records_topic:
            self._register(self.config.late_records_topic, 1)

    def changelog_topic(self, store: str) -> str:
        return self.topology.stores[store].changelog_topic(self.config.application_id)

    def _register(self, logical: str, partitions: int, key_column: str = "key", value_column: str = "value", layout: TopicLayout | None = None) -> None:
        entry = _Entry(logical, self.physical(logical), partitions, None, key_column, value_column)
        if Topic.exists(self.root, entry.physical):
            self._load(entry)
        elif layout is not None:
            create_topic_with_layout(self.root, entry.physical, layout, exist_ok=True)
            self._load(entry)
        else:
            entry.next_offsets = [0] * partitions
        self._entries[logical] = entry

    def _load(self, entry: _Entry) -> None:
        topic = Topic.open(self.root, entry.physical)
        table = topic.delta_table()
        entry.layout = topic.layout
        entry.partitions = topic.partitions
        entry.table_id = table.metadata().id
        entry.table = table
        entry.version = table.version()
        ends = delta_log.end_offsets(table)
        entry.next_offsets = [ends.get(p, 0) for p in range(topic.partitions)]

    def ensure_created(self, logical: str, layout: TopicLayout) -> None:
        entry = self._entries[logical]
        with self._guard:
            if entry.layout is None:
                create_topic_with_layout(self.root, entry.physical, layout, exist_ok=True)
                self._load(entry)

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

    def advance(self, logical: str, partition: int, count: int) -> None:
        self._entries[logical].next_offsets[partition] += count

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

    def committed(self, logical: str, version: int) -> None:
        self._entries[logical].version = version

    def lock(self, logical: str) -> threading.Lock:
        return self._entries[logical].lock

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
            staging=logical in self.topology.internal_topics and self._writer_tasks(logical) > 1,
        )

    def _writer_tasks(self, logical: str) -> int:
        return sum(self.tasks(s) for s in self.topology.subtopologies if logical in s.sink_topics)

    def source_target(self, logical: str) -> TopicTarget:
        """A topic a sub-topology reads (it must exist)."""
        topic = Topic.open(self.root, self.physical(logical))
        return TopicTarget(logical, topic.name, topic.uri, topic.partitions, topic.layout)

    def written_by(self, sub: SubTopology) -> list[str]:
        """Logical topics a sub-topology's tasks may write."""
        topics = list(sub.sink_topics)
        topics += [self.changelog_topic(s) for s in sub.stores]
        topics.append(self.config.dlq_topic)
        if self.config.late_records_topic and any(self.topology.nodes[n].stores for n in sub.nodes):
            topics.append(self.config.late_records_topic)
        return topics

    def shared(self, logical: str) -> bool:
        """Written by more than one sub-topology (the dead-letter topic, a shared sink)."""
        return sum(logical in self.written_by(s) for s in self.topology.subtopologies) > 1
