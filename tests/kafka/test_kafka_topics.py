"""Reading Kafka topics by offset range into record form, against a real broker: keys, values,
timestamps and headers as produced; every format decodes what its Kafka serializer writes; bytes
that do not decode are marked for the dead-letter topic, never dropped; ranges, watermarks and a
missing topic behave."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from deltastreams.conf.errors import ConfigError, TopicNotFoundError
from deltastreams.sinks.kafka import KafkaTopic, encode, partition_count, read_range, watermarks


def produce(broker, topic, records):
    """``(partition, key bytes, value bytes, timestamp, headers)`` records, in order, batched as
    librdkafka batches by default."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for partition, key, value, ts, headers in records:
        producer.produce(topic, key=key, value=value, partition=partition, timestamp=ts, headers=headers)
    assert producer.flush(10) == 0


def test_a_range_reads_exactly_its_records_with_timestamps_and_headers(broker, topic_name):
    broker.create_topic(topic_name, 2)
    records = [(i % 2, f"k{i}".encode(), f"v{i}".encode(), 1000 + i, [("h", bytes([i]))] if i % 3 == 0 else None) for i in range(40)]
    produce(broker, topic_name, records)
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    assert partition_count(topic) == 2
    assert watermarks(topic, [0, 1]) == {0: (0, 20), 1: (0, 20)}
    table = read_range(topic, 1, 5, 12)
    expected = [r for r in records if r[0] == 1][5:12]
    assert table["offset"].to_pylist() == list(range(5, 12))
    assert table["partition"].to_pylist() == [1] * 7
    assert table["key"].to_pylist() == [r[1].decode() for r in expected]
    assert table["value"].to_pylist() == [r[2].decode() for r in expected]
    assert table["timestamp"].to_pylist() == [r[3] for r in expected]
    assert [None if h is None else [(e["key"], e["value"]) for e in h] for h in table["headers"].to_pylist()] == [r[4] for r in expected]
    assert table["_rejected"].null_count == 7
    assert read_range(topic, 0, 20, 20).num_rows == 0


def test_formats_decode_what_kafkas_serializers_write(broker, topic_name):
    broker.create_topic(topic_name, 1)
    values = [{"user_id": "u1", "page": "/a"}, {"user_id": "u2", "page": None}, None]
    produce(broker, topic_name, [(0, struct.pack(">q", i), encode([v], "json")[0], i, None) for i, v in enumerate(values)])
    value_type = pa.struct([("user_id", pa.string()), ("page", pa.string())])
    table = read_range(KafkaTopic(broker.bootstrap_servers, topic_name, key_format="long", value_format="json", value_type=value_type), 0, 0, 3)
    assert table["key"].type == pa.int64() and table["key"].to_pylist() == [0, 1, 2]
    assert table["value"].type == value_type and table["value"].to_pylist() == values


def test_undecodable_records_are_marked_with_the_reason_not_dropped(broker, topic_name):
    broker.create_topic(topic_name, 1)
    produce(broker, topic_name, [(0, b"a", b'{"n": 1}', 1, None), (0, b"b", b"not json", 2, None), (0, b"\xff", b'{"n": "x"}', 3, None)])
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="json", value_type=pa.struct([("n", pa.int64())]))
    table = read_range(topic, 0, 0, 3)
    assert table.num_rows == 3
    reasons = table["_rejected"].to_pylist()
    assert reasons[0] is None
    assert reasons[1].startswith("value: not json")
    assert "key: not string" in reasons[2] and "value: does not fit" in reasons[2]


def test_a_missing_topic_and_a_bad_format_say_so(broker):
    with pytest.raises(TopicNotFoundError, match="no-such-topic"):
        partition_count(KafkaTopic(broker.bootstrap_servers, "no-such-topic"))
    with pytest.raises(ConfigError, match="value_format"):
        KafkaTopic(broker.bootstrap_servers, "x", value_format="avro")


def test_encode_is_the_inverse_of_decoding():
    assert encode(["a", None], "string") == [b"a", None]
    assert encode([1], "long") == [struct.pack(">q", 1)]
    assert json.loads(encode([{"b": 1, "a": [2]}], "json")[0]) == {"a": [2], "b": 1}
