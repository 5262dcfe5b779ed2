"""The Kafka sink's transactional publisher against a real broker: each batch goes out in one
Kafka transaction carrying its number, recovery publishes exactly the batches that had not
reached Kafka, and a second instance fences the first (a zombie cannot commit)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltastreams.sinks.kafka import KafkaTopic, read_range
from deltastreams.sinks.kafka_publisher import KILL_POINTS, NO_BATCH, FencedError, KafkaPublisher, publish_missing
from tests.kafka.waiting import settled_end_offsets


def batch(start, n):
    return {"out": pa.table({"partition": pa.array([i % 2 for i in range(start, start + n)], pa.int32()), "key": [f"k{i}" for i in range(start, start + n)],
                             "value": [f"v{i}" for i in range(start, start + n)], "timestamp": pa.array(range(start, start + n), pa.int64())})}


def publisher_for(broker, name, instance="app-1-kafka", on_step=None):
    publisher = KafkaPublisher(instance, {"out": KafkaTopic(broker.bootstrap_servers, name)}, {"out": 2}, on_step=on_step)
    publisher.start()
    return publisher


def values(broker, name):
    topic = KafkaTopic(broker.bootstrap_servers, name)
    return sorted(v for p, end in settled_end_offsets(topic, range(2)).items() for v in read_range(topic, p, 0, end)["value"].to_pylist())


def test_batches_go_out_once_with_their_number(broker, topic_name):
    broker.create_topic(topic_name, 2)
    publisher = publisher_for(broker, topic_name, f"{topic_name}-0-kafka")
    assert publisher.last_published() == NO_BATCH
    assert publisher.publish(0, batch(0, 5)) == 5
    assert publisher.publish(1, batch(5, 3)) == 3
    assert publisher.last_published() == 1
    # A restart: the decided batches 0..3 are replayed; only 2 and 3 had not reached Kafka.
    publisher.close()
    restarted = publisher_for(broker, topic_name, f"{topic_name}-0-kafka")
    assert publish_missing(restarted, [(0, batch(0, 5)), (1, batch(5, 3)), (2, batch(8, 4)), (3, batch(12, 1))]) == [2, 3]
    assert restarted.last_published() == 3
    assert values(broker, topic_name) == sorted(f"v{i}" for i in range(13))


def test_a_new_instance_fences_the_old_one(broker, topic_name):
    broker.create_topic(topic_name, 2)
    old = publisher_for(broker, topic_name, f"{topic_name}-0-kafka")
    old.publish(0, batch(0, 2))
    new = publisher_for(broker, topic_name, f"{topic_name}-0-kafka")
    with pytest.raises(FencedError, match="fenced"):
        old.publish(1, batch(2, 2))
    assert new.last_published() == 0
    new.publish(1, batch(2, 2))
    assert new.last_published() == 1


def test_each_batch_passes_the_kill_points_in_order_and_is_in_the_log_before_its_number(broker, topic_name):
    """The kill tests rely on what each point means: at before_kafka_send_offsets every record of
    the batch is in the partitions' logs, uncommitted (past the read_committed end)."""
    from confluent_kafka import Consumer, TopicPartition

    broker.create_topic(topic_name, 2)
    seen, in_log = [], []

    def step(point):
        seen.append(point)
        if point == "before_kafka_send_offsets":
            for isolation in ("read_uncommitted", "read_committed"):
                consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "steps", "isolation.level": isolation})
                in_log.append(sum(consumer.get_watermark_offsets(TopicPartition(topic_name, p), timeout=10, cached=False)[1] for p in range(2)))
                consumer.close()

    publisher = publisher_for(broker, topic_name, f"{topic_name}-0-kafka", on_step=step)
    publisher.publish(0, batch(0, 6))
    assert seen == list(KILL_POINTS)
    assert in_log == [6, 0]
    publisher.close()
