"""The wire reader (sinks/_internal/kafka_wire.py): a range in many small fetches, read
uncommitted, kept connections, and every case where librdkafka reads instead (compressed
batches, settings it does not speak, a connection that broke), each giving the Python reader's
records."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from deltastreams.sinks._internal import kafka_wire
from deltastreams.sinks.kafka import KafkaTopic, TopicError, read_range, watermarks
from tests.kafka.test_kafka_reader import VALUE_TYPE, produce_mixed


def _same_as_python(topic: KafkaTopic, partition: int, start: int, end: int) -> None:
    in_c = read_range(topic, partition, start, end, 30)
    in_python = read_range(topic, partition, start, end, 30, reader="python")
    assert in_c.equals(in_python), (partition, start, end, in_c.num_rows, in_python.num_rows)


def test_a_range_in_fetches_of_a_few_batches_keeps_aborted_transactions_out(broker, topic_name, monkeypatch):
    # Each response lists only the aborted transactions it overlaps: with small fetches a
    # transaction's records and its ABORT marker arrive in different responses.
    monkeypatch.setattr(kafka_wire, "PARTITION_MAX_BYTES", 2_000)
    broker.create_topic(topic_name, 2)
    produce_mixed(broker, topic_name, 1_500, seed=5)
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="json", value_type=VALUE_TYPE)
    fetches = []
    fetch = kafka_wire._Connection.fetch
    monkeypatch.setattr(kafka_wire._Connection, "fetch", lambda self, *a: fetches.append(a) or fetch(self, *a))
    for partition, (low, high) in watermarks(topic, [0, 1]).items():
        _same_as_python(topic, partition, low, high)
        _same_as_python(topic, partition, low + 7, high - 5)
    assert len(fetches) > 20


def test_read_uncommitted_gives_the_aborted_records_too(broker, topic_name):
    broker.create_topic(topic_name, 2)
    produce_mixed(broker, topic_name, 400, seed=9)
    committed = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="bytes")
    everything = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="bytes", client={"isolation.level": "read_uncommitted"})
    assert kafka_wire.usable(everything.consumer_settings())
    for partition, (low, high) in watermarks(committed, [0, 1]).items():
        _same_as_python(everything, partition, low, high)
        assert read_range(everything, partition, low, high, 30).num_rows > read_range(committed, partition, low, high, 30).num_rows


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_through_librdkafka(broker, topic_name, codec):
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.codec": codec})
    for i in range(300):
        producer.produce(topic_name, key=b"k%d" % (i % 3), value=b'{"user": "u", "n": %d}' % i, partition=0, headers=[("h", b"%d" % i)])
    assert producer.flush(10) == 0
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="json", value_type=VALUE_TYPE)
    assert kafka_wire.read_wire(topic.consumer_settings(), topic_name, 0, 0, 300, 10) is None
    _same_as_python(topic, 0, 0, 300)
    assert read_range(topic, 0, 0, 300, 30)["value"].to_pylist()[-1] == {"user": "u", "n": 299}


def test_settings_it_does_not_speak_leave_the_range_to_librdkafka(broker, topic_name):
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(20):
        producer.produce(topic_name, value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, client={"socket.timeout.ms": 20_000})
    assert not kafka_wire.usable(topic.consumer_settings())
    assert kafka_wire.read_wire(topic.consumer_settings(), topic_name, 0, 0, 10, 10) is None
    _same_as_python(topic, 0, *watermarks(topic, [0])[0])


def test_connections_are_kept_and_a_broken_one_leaves_the_range_to_librdkafka(broker, topic_name):
    broker.create_topic(topic_name, 2)
    produce_mixed(broker, topic_name, 300, seed=4)
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="bytes")
    kafka_wire.close_connections()
    ends = watermarks(topic, [0, 1])
    for partition, (low, high) in ends.items():
        _same_as_python(topic, partition, low, high)
    kept = [c for held in kafka_wire._connections.kept().values() for c in held]
    assert len(kept) == 1  # one broker: one connection for its metadata and both partitions' fetches
    kept[0].sock.close()  # as if the broker had closed it
    _same_as_python(topic, 0, *ends[0])
    assert [c for held in kafka_wire._connections.kept().values() for c in held] == []  # the broken one is gone
    _same_as_python(topic, 1, *ends[1])  # and a new one is opened
    assert len([c for held in kafka_wire._connections.kept().values() for c in held]) == 1


def test_a_range_past_the_partitions_end_times_out_saying_so(broker, topic_name):
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic_name, value=b"x", partition=0)
    assert producer.flush(10) == 0
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="bytes")
    with pytest.raises(TopicError, match=rf"'{topic_name}' partition 0 offsets \[0, 5\) took over 1 s"):
        read_range(topic, 0, 0, 5, 1.0)
