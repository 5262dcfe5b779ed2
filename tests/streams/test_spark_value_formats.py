"""Avro and JSON values on Delta topics, through a real Spark run: the topics hold the encoded bytes
(a ``value`` binary column, as other systems writing Avro or JSON would leave them), the topology
sees decoded structs, outputs are encoded again; records that do not decode reach the dead-letter
topic with their reason and raw bytes while the rest of the batch is processed."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import SchemaMismatchError
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import AvroFormat, JsonFormat, StreamsBuilder
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark

VIEW = {"type": "record", "name": "PageView", "fields": [{"name": "user_id", "type": "string"}, {"name": "duration_s", "type": "long"}]}
VIEW_FIELDS = {"user_id": "string", "duration_s": "long"}


def avro(value, schema=VIEW):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def append(root, topic, rows):
    keys, values = zip(*rows, strict=True)
    Topic.open(root, topic).append(
        pa.table({"key": list(keys), "value": pa.array(values, pa.binary()), "timestamp": pa.array(range(1, len(rows) + 1), pa.int64())})
    )


def long_views() -> StreamsBuilder:
    """Avro and JSON page views merged, the long ones written both as Avro and as JSON."""
    builder = StreamsBuilder()
    from_avro = builder.stream("views-avro", value_format=AvroFormat(VIEW))
    from_json = builder.stream("views-json", value_format=JsonFormat(VIEW_FIELDS))
    long = from_avro.merge(from_json).filter(lambda user, view: view["duration_s"] >= 30)
    long.to("long-views-avro", value_format=AvroFormat(VIEW))
    long.to("long-views-json", value_format=JsonFormat(VIEW_FIELDS))
    return builder


def test_avro_and_json_round_trip_through_spark_and_bad_records_go_to_the_dlq(spark, tmp_path):
    root = str(tmp_path)
    for topic in ("views-avro", "views-json"):
        create_topic(root, topic, partitions=1, key_type=pa.string(), value_type=pa.binary())
    append(root, "views-avro", [
        ("u1", avro({"user_id": "u1", "duration_s": 40})),
        ("u2", b"\xff\xfe\x00"),  # not Avro
        ("u3", avro({"user_id": "u3"}, {"type": "record", "name": "PageView", "fields": [{"name": "user_id", "type": "string"}]})),  # a field short
        ("u4", avro({"user_id": "u4", "duration_s": 10})),
        ("u5", avro({"user_id": "u5", "duration_s": 90})),
    ])
    append(root, "views-json", [
        ("j1", b'{"user_id": "j1", "duration_s": 31, "extra": true}'),
        ("j2", b'{"user_id": "j2", "duration_s": "45"}'),  # wrong type
        ("j3", b'{"duration_s": 50}'),  # required field missing
        ("j4", b"not json"),
    ])
    config = StreamsConfig.load({"application_id": "formats", "root": root, "commit_interval_ms": 100})
    StreamsApp(long_views().build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)

    as_avro = Topic.open(root, "long-views-avro").read().sort_by("timestamp")
    assert as_avro.schema.field("value").type == pa.binary()
    decoded = [fastavro.schemaless_reader(io.BytesIO(raw), fastavro.parse_schema(VIEW)) for raw in as_avro["value"].to_pylist()]
    expected = [{"user_id": "u1", "duration_s": 40}, {"user_id": "j1", "duration_s": 31}, {"user_id": "u5", "duration_s": 90}]
    assert sorted(decoded, key=lambda v: v["user_id"]) == sorted(expected, key=lambda v: v["user_id"])
    as_json = Topic.open(root, "long-views-json").read()
    assert sorted((json.loads(raw) for raw in as_json["value"].to_pylist()), key=json.dumps) == sorted(expected, key=json.dumps)

    dead = {r["key"]: r["value"] for r in Topic.open(root, "formats-dlq").read().to_pylist()}
    assert sorted(dead) == ['"j2"', '"j3"', '"j4"', '"u2"', '"u3"']
    assert dead['"u2"']["reason"].startswith("value is not Avro of schema 'PageView'") and json.loads(dead['"u2"']["value"]) == "fffe00"
    assert "end mid-record" in dead['"u3"']["reason"]
    assert dead['"j2"']["reason"] == "field 'duration_s' is \"45\" (str), not int64"
    assert dead['"j3"']["reason"] == "value misses required field(s) ['user_id']"
    assert dead['"j4"']["reason"].startswith("value is not JSON") and json.loads(dead['"j4"']["value"]) == "not json"
    assert {(v["source_topic"], v["source_offset"]) for v in dead.values()} == {
        ("views-avro", 1), ("views-avro", 2), ("views-json", 1), ("views-json", 2), ("views-json", 3)}


def test_a_topic_that_does_not_hold_encoded_values_stops_the_application_at_start(spark, tmp_path):
    root = str(tmp_path)
    create_topic(root, "views", partitions=1, key_type=pa.string(), value_type=pa.struct([("user_id", pa.string()), ("duration_s", pa.int64())]))
    builder = StreamsBuilder()
    builder.stream("views", value_format=AvroFormat(VIEW)).to("out")
    config = StreamsConfig.load({"application_id": "formats-mismatch", "root": root})
    with pytest.raises(SchemaMismatchError, match="topic 'views' is read with value_format=AvroFormat, but its values are stored one column per field"):
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=60)
