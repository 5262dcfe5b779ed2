"""Two broker behaviours the project relies on, against Apache Kafka (the Tansu broker the tests
used before had neither, and the project worked around both):

- a partition's high watermark after a batching producer is its last offset + 1, so the planner
  sees a partition's whole tail (our producers batch);
- ``isolation.level=read_committed`` readers (librdkafka's default, and :mod:`deltastreams.sinks.kafka`'s)
  never see the records of aborted transactions, and a partition's end for them stops before an
  open transaction: what exactly-once *into* Kafka needs (tests/kafka/test_kafka_sink_kill_points.py)."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition

from deltastreams.sinks.kafka import KafkaTopic, read_range, watermarks
from tests.kafka.waiting import eventually


def consume_all(broker, topic, isolation):
    """Every record of partition 0 a reader at ``isolation`` gets, as (offset, value)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "semantics", "isolation.level": isolation, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records, eof = [], False
    while not eof:
        for message in consumer.consume(100, timeout=1):
            if message.error() is None:
                records.append((message.offset(), message.value()))
            else:
                eof = True
    consumer.close()
    return records


def test_the_high_watermark_after_a_batching_producer_is_the_last_offset_plus_one(broker, topic_name):
    broker.create_topic(topic_name, 1)
    # linger.ms: the 20 records leave in one produce request, one record batch.
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 100})
    for i in range(20):
        producer.produce(topic_name, value=b"%d" % i, partition=0)
    assert producer.flush(10) == 0
    assert consume_all(broker, topic_name, "read_uncommitted") == [(i, b"%d" % i) for i in range(20)]
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "semantics", "isolation.level": isolation})
        assert consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=5, cached=False) == (0, 20), isolation
        consumer.close()
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    assert watermarks(topic, [0]) == {0: (0, 20)}
    assert read_range(topic, 0, 0, 20)["value"].to_pylist() == [str(i) for i in range(20)]


def test_read_committed_readers_never_see_aborted_records(broker, topic_name):
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"semantics-{topic_name}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic_name, value=b"aborted-%d" % i, partition=0)
    assert producer.flush(10) == 0  # in the partition's log before the abort
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce(topic_name, value=b"committed", partition=0)
    producer.commit_transaction(10)
    # The aborted records are in the log (a read_uncommitted reader gets them) ...
    assert [v for _, v in consume_all(broker, topic_name, "read_uncommitted")] == [b"aborted-0", b"aborted-1", b"aborted-2", b"committed"]
    # ... and filtered for read_committed readers: offset 3 is the abort marker, 5 the commit marker.
    assert consume_all(broker, topic_name, "read_committed") == [(4, b"committed")]
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    assert watermarks(topic, [0]) == {0: (0, 6)}
    assert read_range(topic, 0, 0, 6)["value"].to_pylist() == ["committed"]


def test_a_read_committed_end_stops_before_an_open_transaction(broker, topic_name):
    """The planner plans up to this end: records of an undecided transaction are never planned."""
    broker.create_topic(topic_name, 1)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(5):
        plain.produce(topic_name, value=b"%d" % i, partition=0)
    assert plain.flush(10) == 0
    transactional = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"semantics-{topic_name}"})
    transactional.init_transactions(30)
    transactional.begin_transaction()
    transactional.produce(topic_name, value=b"open", partition=0)
    assert transactional.flush(10) == 0
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    assert watermarks(topic, [0]) == {0: (0, 5)}
    transactional.commit_transaction(10)
    assert eventually(lambda: watermarks(topic, [0]), {0: (0, 7)}) == {0: (0, 7)}
    assert read_range(topic, 0, 0, 7)["value"].to_pylist() == ["0", "1", "2", "3", "4", "open"]
