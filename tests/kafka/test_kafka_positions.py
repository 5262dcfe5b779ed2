"""How the driver plans Kafka offsets, against a real broker: a never-read topic starts at the
configured starting offsets, a batch takes at most max_records over the partitions, the same share of each one's backlog, gone offsets
(also ones Kafka really deleted) fail clearly or resume from the earliest as configured, and a
changed partition count stops the application rather than moving keys between tasks."""

from __future__ import annotations

import pyarrow as pa
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from deltastreams.conf.errors import TopicError
from deltastreams.conf.kafka import KafkaConfig
from deltastreams.sinks.kafka import KafkaTopic, OffsetOutOfRangeError, read_range
from deltastreams.streams import StreamsBuilder
from deltastreams.streams._internal.runtime.kafka_sources import NEVER_READ, KafkaSources


def sources(broker, topic, **settings):
    builder = StreamsBuilder()
    builder.stream(topic, value_type=pa.string()).to("out")
    return KafkaSources(KafkaConfig(bootstrap_servers=broker.bootstrap_servers, source_topics=(topic,), **settings), builder.build())


def fill(broker, topic, partitions, per_partition):
    broker.create_topic(topic, partitions)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=b"v%d" % i, partition=p)
    assert producer.flush(10) == 0


def test_a_batch_starts_where_configured_and_takes_at_most_max_records(broker, topic_name):
    fill(broker, topic_name, 2, 30)
    earliest = sources(broker, topic_name)
    bounds = earliest.bounds(topic_name)
    start = earliest.start(topic_name, NEVER_READ, bounds)
    assert start == {0: 0, 1: 0}
    assert earliest.end(start, earliest.latest(topic_name), 40) == {0: 20, 1: 20}
    assert earliest.end({0: 25, 1: 0}, earliest.latest(topic_name), 35) == {0: 30, 1: 30}  # all of it fits
    # more than fits: every partition advances by the same share of its backlog (5 of 30, 1 of 6)
    assert earliest.end({0: 0, 1: 24}, earliest.latest(topic_name), 6) == {0: 5, 1: 25}
    assert earliest.end({0: 25, 1: 0}, earliest.latest(topic_name), 7) == {0: 26, 1: 6}
    assert not earliest.has_new(topic_name, earliest.latest(topic_name), {0: 30, 1: 30})
    latest = sources(broker, topic_name, starting_offsets="latest")
    assert latest.start(topic_name, NEVER_READ, bounds) == {0: 30, 1: 30}
    assert not latest.has_new(topic_name, latest.latest(topic_name), NEVER_READ)  # nothing past where it starts


def test_gone_offsets_fail_clearly_or_resume_from_the_earliest(broker, topic_name):
    fill(broker, topic_name, 1, 10)
    bounds = {0: (5, 10)}  # as if retention had removed offsets 0..4
    with pytest.raises(OffsetOutOfRangeError, match="on_missing_offsets=earliest"):
        sources(broker, topic_name).start(topic_name, {0: 2}, bounds)
    assert sources(broker, topic_name, on_missing_offsets="earliest").start(topic_name, {0: 2}, bounds) == {0: 5}
    with pytest.raises(OffsetOutOfRangeError, match="recreated"):
        sources(broker, topic_name).start(topic_name, {0: 12}, {0: (0, 10)})


def test_offsets_deleted_in_kafka_fail_clearly_or_resume_from_the_earliest(broker, topic_name):
    fill(broker, topic_name, 1, 10)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for done in admin.delete_records([TopicPartition(topic_name, 0, 5)]).values():
        done.result(timeout=10)
    kafka = sources(broker, topic_name)
    assert kafka.bounds(topic_name) == {0: (5, 10)}
    with pytest.raises(OffsetOutOfRangeError, match="on_missing_offsets=earliest"):
        kafka.start(topic_name, {0: 2}, kafka.bounds(topic_name))
    assert sources(broker, topic_name, on_missing_offsets="earliest").start(topic_name, {0: 2}, kafka.bounds(topic_name)) == {0: 5}
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    with pytest.raises(OffsetOutOfRangeError, match="offset 2 is no longer there"):
        read_range(topic, 0, 2, 7, timeout_s=10)
    assert read_range(topic, 0, 5, 10)["value"].to_pylist() == [f"v{i}" for i in range(5, 10)]


def test_a_changed_partition_count_stops_the_application(broker, topic_name):
    fill(broker, topic_name, 3, 1)
    kafka = sources(broker, topic_name)
    with pytest.raises(TopicError, match="has 3 partitions, but this application read it with 2"):
        kafka.start(topic_name, {0: 1, 1: 1}, kafka.bounds(topic_name))
