"""Value formats in the processing core, on the test driver (the very code Spark's tasks run):
sources decode before anything else looks at a value, sinks encode, and a record that does not
fit either way goes to the dead-letter topic with the reason while the rest goes on."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from deltastreams.conf.errors import TopologyError
from deltastreams.streams import AvroFormat, JsonFormat, StreamsBuilder, TopologyTestDriver

VIEW = {"type": "record", "name": "PageView", "fields": [{"name": "user_id", "type": "string"}, {"name": "duration_s", "type": "long"}]}


def avro(value) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(VIEW), value)
    return out.getvalue()


def test_avro_in_json_out_with_bad_records_in_the_dead_letter_topic_and_the_rest_processed():
    builder = StreamsBuilder()
    (
        builder.stream("views", value_format=AvroFormat(VIEW))
        .map_values(lambda view: view and {"user_id": view["user_id"], "minutes": view["duration_s"] // 60 if view["duration_s"] >= 0 else None})
        .to("minutes", value_format=JsonFormat({"user_id": "string", "minutes": "long"}))
    )
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_batch("views", [
            ("u1", avro({"user_id": "u1", "duration_s": 120}), 1),
            ("u2", b"\x01", 2),
            ("u3", avro({"user_id": "u3", "duration_s": -5}), 3),  # minutes null: JsonFormat requires it
            ("u4", None, 4),  # a tombstone stays a tombstone
            ("u5", avro({"user_id": "u5", "duration_s": 600}), 5),
        ])
        out = driver.read_output("minutes")
        assert [(r.key, None if r.value is None else json.loads(r.value)) for r in out] == [
            ("u1", {"user_id": "u1", "minutes": 2}), ("u4", None), ("u5", {"user_id": "u5", "minutes": 10})]
        dead = {r.value["source_offset"]: r.value for r in driver.dead_letters()}
        assert sorted(dead) == [1, 2]
        assert dead[1]["node"] == "KSTREAM-SOURCE-0000000000" and json.loads(dead[1]["value"]) == "01"
        assert dead[1]["reason"].startswith("value is not Avro of schema 'PageView'")
        assert dead[2]["node"] == "KSTREAM-SINK-0000000002" and dead[2]["reason"] == "value misses required field(s) ['minutes']"
        assert json.loads(dead[2]["value"]) == {"user_id": "u3", "minutes": None}


def test_the_timestamp_extractor_and_a_table_see_decoded_values():
    fields = {"user_id": "string", "at": "long"}
    builder = StreamsBuilder()
    users = builder.table("users", value_format=JsonFormat({"user_id": "string", "plan": "string"}))
    (
        builder.stream("clicks", value_format=JsonFormat(fields), timestamp_extractor=lambda k, v, ts: v["at"])
        .join(users, lambda click, user: f"{click['at']}:{user['plan']}")
        .to("enriched")
    )
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("users", "u1", b'{"user_id": "u1", "plan": "pro"}', timestamp=1)
        driver.pipe_input("clicks", "u1", b'{"user_id": "u1", "at": 42}', timestamp=2)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("enriched")] == [("u1", "42:pro", 42)]


def test_a_value_format_is_checked_where_the_topology_is_built():
    builder = StreamsBuilder()
    with pytest.raises(TopologyError, match=r"stream\(\): value_format is a format such as AvroFormat\(schema\)"):
        builder.stream("views", value_format=VIEW)
    with pytest.raises(TopologyError, match="give value_format or value_type, not both"):
        builder.stream("views", value_format=AvroFormat(VIEW), value_type=pa.binary())
    with pytest.raises(TopologyError, match=r"to\(\): value_format is a format"):
        builder.stream("views").to("out", value_format="json")


def test_with_on_bad_record_fail_an_undecodable_value_stops_the_batch_naming_the_source():
    from deltastreams.streams import RecordError

    builder = StreamsBuilder()
    builder.stream("views", value_format=AvroFormat(VIEW)).to("out")
    with TopologyTestDriver(builder.build(), {"on_bad_record": "fail"}) as driver:
        with pytest.raises(RecordError, match=r"KSTREAM-SOURCE-0000000000 cannot process a record \(task 0_0\): value is not Avro of schema 'PageView'"):
            driver.pipe_input("views", "u1", b"\xff", timestamp=1)


def test_old_avro_records_are_read_with_the_newer_reader_schema():
    v2 = {"type": "record", "name": "PageView", "fields": [
        {"name": "user_id", "type": "string"}, {"name": "duration_s", "type": "long"}, {"name": "device", "type": "string", "default": "web"}]}
    builder = StreamsBuilder()
    builder.stream("views", value_format=AvroFormat(VIEW, reader_schema=v2)).map_values(lambda v: f"{v['user_id']}@{v['device']}").to("out")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("views", "u1", avro({"user_id": "u1", "duration_s": 3}), timestamp=1)
        assert [r.value for r in driver.read_output("out")] == ["u1@web"]
