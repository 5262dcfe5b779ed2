"""Avro from a Kafka topic to JSON on a Kafka topic, through a real Spark run and a real broker:
the application decodes what a Kafka producer wrote with fastavro, publishes what its JSON format
encodes (exactly once, read_committed), and an undecodable record reaches the dead-letter topic
while the others are processed."""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from confluent_kafka import Producer

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic
from deltastreams.sinks.kafka import KafkaTopic, read_range
from deltastreams.streams import AvroFormat, JsonFormat, StreamsBuilder
from deltastreams.streams.app import StreamsApp
from tests.kafka.waiting import settled_end_offsets

pytestmark = pytest.mark.spark

VIEW = {"type": "record", "name": "PageView", "fields": [{"name": "user_id", "type": "string"}, {"name": "duration_s", "type": "long"}]}


def avro(value) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(VIEW), value)
    return out.getvalue()


def test_avro_from_kafka_to_json_on_kafka_with_the_bad_record_in_the_dlq(spark, broker, topic_name, tmp_path):
    source, sink = f"{topic_name}-views", f"{topic_name}-long-views"
    broker.create_topic(source, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    views = [("u1", avro({"user_id": "u1", "duration_s": 45})), ("u2", b"\xff\xfe\x00"), ("u3", avro({"user_id": "u3", "duration_s": 5})),
             ("u4", avro({"user_id": "u4", "duration_s": 300}))]
    for i, (key, value) in enumerate(views):
        producer.produce(source, key=key.encode(), value=value, partition=0, timestamp=1000 + i)
    assert producer.flush(10) == 0

    builder = StreamsBuilder()
    fields = {"user_id": "string", "duration_s": "long"}
    builder.stream(source, value_format=AvroFormat(VIEW)).filter(lambda k, v: v["duration_s"] >= 30).to(sink, value_format=JsonFormat(fields))
    config = StreamsConfig.load({
        "application_id": "kafka-formats", "root": str(tmp_path), "commit_interval_ms": 100,
        "kafka.bootstrap_servers": broker.bootstrap_servers, "kafka.source_topics": [source], "kafka.sink_topics": [sink],
    })
    StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)

    published = KafkaTopic(broker.bootstrap_servers, sink, value_format="bytes")
    records = read_range(published, 0, 0, settled_end_offsets(published, [0])[0])
    assert [(k, json.loads(v)) for k, v in zip(records["key"].to_pylist(), records["value"].to_pylist(), strict=True)] == [
        ("u1", {"user_id": "u1", "duration_s": 45}), ("u4", {"user_id": "u4", "duration_s": 300})]
    dead = Topic.open(str(tmp_path), "kafka-formats-dlq").read().to_pylist()
    assert [(d["key"], d["value"]["source_topic"], d["value"]["source_offset"], json.loads(d["value"]["value"])) for d in dead] == [
        ('"u2"', source, 1, "fffe00")]
    assert dead[0]["value"]["reason"].startswith("value is not Avro of schema 'PageView'")
