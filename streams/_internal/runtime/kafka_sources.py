"""Input topics that live in Kafka, as the driver plans them.

A Kafka topic's position is not a Delta version but an offset per partition: the next offset to
read (:data:`Offsets`). A sub-topology's batch reads, per partition, the offsets from its
committed position up to the partition's end (the high watermark, with ``read_committed`` the
last stable offset), at most ``max_records_per_batch`` records per topic (rounded up per partition),
shared out over the partitions in proportion to their backlogs. The ranges go into the task plans (each task reads its own partition with
``assign()``, :func:`deltastreams.sinks.kafka.read_range`) and into the batch's decision in the sub-topology's
transaction log, so Kafka input to Delta outputs is exactly once by the application's own commit
protocol: no consumer group, no Kafka transaction.

Offsets to read that are no longer in Kafka (retention, a recreated topic) fail the application
with a clear error, or, with ``kafka.on_missing_offsets = "earliest"``, resume from the oldest
offset still there with a warning naming the gap: never a silent skip.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

import pyarrow as pa

from deltastreams.conf.errors import TopicError
from deltastreams.conf.kafka import KafkaConfig
from deltastreams.sinks.kafka import KafkaTopic, OffsetOutOfRangeError, partition_count, watermarks
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import SourceNode

log = logging.getLogger("deltastreams")

Offsets = dict[int, int]
"""Per partition, the next offset to read."""
NEVER_READ = -1
"""A sub-topology's position on a topic it has never read (as for Delta topics)."""


class KafkaSources:
    """The application's Kafka input topics: where they are, how they decode, where they end."""

    def __init__(self, config: KafkaConfig, topology: Topology) -> None:
        self.config = config
        self.topics: dict[str, KafkaTopic] = {}
        for node in topology.nodes.values():
            if not isinstance(node, SourceNode) or node.internal:
                continue
            for name in node.topics:
                if name in config.source_topics:
                    # With a value format, the core decodes: Kafka hands it the bytes as they are.
                    value_format, value_type = ("bytes", pa.binary()) if node.value_format is not None else (config.value_format, node.value_type)
                    self.topics[name] = KafkaTopic(
                        config.bootstrap_servers, name, config.key_format, value_format, node.key_type, value_type, dict(config.client)
                    )
        self._partitions: dict[str, int] = {}
        self._clients: dict[str, object] = {}
        """One client per topic for the offsets the watcher and the planner ask for every few
        hundred ms (a new client each time connects and fetches metadata anew)."""
        self._lock = threading.Lock()
        self._first: dict[str, Offsets] = {}
        """Per topic, where partitions never read start (resolved once, so a topic read from its
        latest offsets does not look unread forever)."""

    def __contains__(self, topic: str) -> bool:
        return topic in self.topics

    def partitions(self, topic: str) -> int:
        if topic not in self._partitions:
            self._partitions[topic] = partition_count(self.topics[topic])
        return self._partitions[topic]

    def bounds(self, topic: str) -> dict[int, tuple[int, int]]:
        """Per partition, ``(oldest offset still there, end)``."""
        with self._lock:  # the watcher's thread and the trigger's ask
            if topic not in self._clients:
                self._clients[topic] = self.topics[topic].consumer()
            return watermarks(self.topics[topic], range(self.partitions(topic)), consumer=self._clients[topic])

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def latest(self, topic: str) -> Offsets:
        return {p: high for p, (_, high) in self.bounds(topic).items()}

    def start(self, topic: str, position: Offsets | int, bounds: Mapping[int, tuple[int, int]]) -> Offsets:
        """Where a batch starts reading: the committed position, or the configured starting
        offsets for partitions never read; offsets gone from Kafka fail or reset, as configured."""
        committed = position if isinstance(position, dict) else {}
        if committed and set(committed) != set(bounds):
            raise TopicError(
                f"Kafka topic '{topic}' has {len(bounds)} partitions, but this application read it with {len(committed)}: a key's "
                "records (and its state) would move to another task. Recreate the application (new application_id) for the new "
                "partition count, or restore the topic's",
                topic=topic,
            )
        start: Offsets = {}
        for partition, (low, high) in bounds.items():
            offset = committed.get(partition)
            if offset is None:
                first = self._first.setdefault(topic, {})
                offset = first.setdefault(partition, low if self.config.starting_offsets == "earliest" else high)
            elif offset < low:
                if self.config.on_missing_offsets != "earliest":
                    raise OffsetOutOfRangeError(
                        f"Kafka topic '{topic}' partition {partition}: the next offset to read, {offset}, is gone (the oldest still there is "
                        f"{low}: retention, or the topic was recreated). Set kafka.on_missing_offsets=earliest to resume from {low}, "
                        "skipping the gap, or reset the application",
                        topic=topic,
                    )
                log.warning("Kafka topic '%s' partition %d: offsets %d..%d are gone; resuming from %d (kafka.on_missing_offsets=earliest)", topic, partition, offset, low - 1, low)
                offset = low
            elif offset > high:
                raise OffsetOutOfRangeError(
                    f"Kafka topic '{topic}' partition {partition}: this application read up to offset {offset}, but the partition ends at {high} "
                    "(was the topic recreated?); reset the application",
                    topic=topic,
                )
            start[partition] = offset
        return start

    @staticmethod
    def end(start: Offsets, latest: Offsets, max_records: int) -> Offsets:
        """Where the batch stops: each partition's end, or, when the topic holds more than
        ``max_records`` past ``start``, the same share of every partition's backlog. Equal counts
        per partition would let a partition with fewer records run ahead in event time (records
        are spread by key, not by time), and a downstream window would find the other partitions'
        records late that the same events appended to a Delta topic (whole versions, every
        partition at once) keep."""
        backlog = {p: max(0, latest.get(p, offset) - offset) for p, offset in start.items()}
        total = sum(backlog.values())
        if total <= max_records:
            return {p: offset + backlog[p] for p, offset in start.items()}
        return {p: offset + -(-backlog[p] * max_records // total) for p, offset in start.items()}

    def has_new(self, topic: str, latest: Offsets, consumed: Offsets | int) -> bool:
        """Whether some partition has records past the consumed position (for partitions never
        read: past where they start; unknown before the first plan, so yes)."""
        committed = consumed if isinstance(consumed, dict) else {}
        first = self._first.get(topic, {})
        for partition, high in latest.items():
            position = committed.get(partition, first.get(partition))
            if position is None or high > position:
                return True
        return False


def least(positions: list[Offsets | int]) -> Offsets | int:
    """The position every sub-topology reading a topic has consumed: per partition, the least."""
    if any(not isinstance(p, dict) for p in positions):
        return NEVER_READ
    partitions = set().union(*(p.keys() for p in positions)) if positions else set()
    return {q: min(p.get(q, 0) for p in positions) for q in partitions}


def moved(start: Offsets | int, end: Offsets | int) -> bool:
    """Whether a batch's range ``start`` to ``end`` holds any offset."""
    if isinstance(start, dict) and isinstance(end, dict):
        return any(end[p] > start.get(p, 0) for p in end)
    return end > start
