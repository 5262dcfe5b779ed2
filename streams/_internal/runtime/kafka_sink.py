"""Sink topics mirrored to Kafka (``kafka.sink_topics``), exactly once.

Such a topic is written under the root like every topic, by the sub-topology's own commit
protocol. Once a batch is decided and published there, its records of the mirrored topics go to
Kafka in one Kafka transaction carrying the batch's number (:mod:`deltastreams.sinks.kafka_publisher`), from
the driver. A crash between the decision and the Kafka commit leaves a decided batch Kafka lacks:
at start, every sub-topology's Kafka producer first fences any older instance, then publishes the
decided batches after the last one Kafka has, read back from the files the transaction log names.
Records keep their Delta partition in Kafka (both use Kafka's partitioner over the key).
"""

from __future__ import annotations

import logging

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import TopicError
from deltastreams.sinks import Topic, open_table, read_commit
from deltastreams.sinks.kafka import KafkaTopic, create_kafka_topic
from deltastreams.sinks.kafka_publisher import KafkaPublisher
from deltastreams.sinks.transaction import DecidedBatch, decided_entry
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import SinkNode

log = logging.getLogger("deltastreams")


class KafkaMirror:
    """One transactional Kafka producer per sub-topology that writes a mirrored topic."""

    def __init__(self, config: StreamsConfig, topology: Topology, registry: TopicRegistry) -> None:
        self.config = config
        self.registry = registry
        kafka = config.kafka
        self.publishers: dict[int, KafkaPublisher] = {}
        for sub in topology.subtopologies:
            mirrored = [t for t in sub.sink_topics if t in kafka.sink_topics]
            if not mirrored:
                continue
            # A topic written with a value format holds its bytes already: publish them as they are.
            encoded = {t for name in sub.nodes for t in _formatted_topics(topology.nodes[name])}
            topics = {
                t: KafkaTopic(kafka.bootstrap_servers, t, kafka.key_format, "bytes" if t in encoded else kafka.value_format, client=dict(kafka.client))
                for t in mirrored
            }
            partitions = {t: registry.partitions(t) for t in mirrored}
            self.publishers[sub.id] = KafkaPublisher(f"{config.application_id}-{sub.id}-kafka", topics, partitions, on_step=crash_point)

    def start(self, log_uri) -> None:
        """Take over every producer (fencing older instances), then publish what they missed.
        ``log_uri(sub)``: the sub-topology's transaction log."""
        for sub_id, publisher in self.publishers.items():
            for topic, spec in publisher.topics.items():
                found = create_kafka_topic(spec, publisher.partitions[topic])
                if found != publisher.partitions[topic]:
                    raise TopicError(
                        f"Kafka topic '{topic}' has {found} partitions, but the application writes {publisher.partitions[topic]}: "
                        "records keep their partition in Kafka; recreate the Kafka topic with as many",
                        topic=topic,
                    )
            publisher.start()
            missed = _decided_after(log_uri(sub_id), publisher.last_published())
            for batch in missed:
                self.publish(sub_id, batch)
            if missed:
                log.info("sub-topology %d: published %d decided batch(es) Kafka did not have yet", sub_id, len(missed))

    def publish(self, sub_id: int, batch: DecidedBatch) -> int:
        """The batch's records of the mirrored topics, in one Kafka transaction."""
        publisher = self.publishers.get(sub_id)
        if publisher is None:
            return 0
        records = {}
        for topic in publisher.topics:
            publication = batch.tables.get(topic)
            if publication is not None and publication.files:
                layout = self.registry.layout(topic)
                records[topic] = Topic(topic, publication.uri, layout).read_files(list(publication.files))
        if not records:
            return 0
        return publisher.publish(batch.seq, records)

    def close(self) -> None:
        for publisher in self.publishers.values():
            publisher.close()


def _decided_after(uri: str, last: int) -> list[DecidedBatch]:
    """The decided batches of the log at ``uri`` with a number above ``last``, oldest first,
    read from the newest commit backwards."""
    found: list[DecidedBatch] = []
    for version in range(open_table(uri).version(), 0, -1):
        entry = decided_entry(read_commit(uri, version) or [])
        if entry is None:
            continue
        if entry.seq <= last:
            break
        found.append(entry)
    return found[::-1]


def _formatted_topics(node) -> tuple[str, ...]:
    return node.topics if isinstance(node, SinkNode) and node.value_format is not None else ()
