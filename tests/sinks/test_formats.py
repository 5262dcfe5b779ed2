"""The value formats on their own: Avro as fastavro writes it and JSON with declared fields decode
into the schema's Arrow type and encode back; a record that does not fit is named with its reason,
never dropped or coerced; Avro reads old records with a newer schema; a bad schema fails where the
format is built."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from deltastreams.conf.errors import TopologyError
from deltastreams.sinks.formats import AvroFormat, JsonFormat

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}


def written(value, schema=ORDER) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def test_avro_decodes_what_fastavro_writes_into_the_schemas_arrow_type_and_encodes_it_back():
    import datetime as dt

    at = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
    value = {"id": 7, "item": "book", "tags": ["a", "b"], "note": None, "status": "PAID", "at": at}
    fmt = AvroFormat(ORDER)
    assert fmt.value_type == pa.struct([
        ("id", pa.int64()), ("item", pa.string()), ("tags", pa.list_(pa.string())), ("note", pa.string()), ("status", pa.string()),
        ("at", pa.timestamp("ms", tz="UTC")),
    ])
    decoded = fmt.decode([written(value), None])
    assert decoded.errors == [None, None]
    assert decoded.values.to_pylist() == [value, None]  # a null value (a tombstone) stays null
    assert fmt.encode(decoded.values).values.to_pylist() == [written(value), None]


def test_avro_names_each_record_that_does_not_decode_and_keeps_the_others():
    good = {"id": 1, "item": "pen", "tags": [], "note": "x", "status": "NEW", "at": 0}
    decoded = AvroFormat(ORDER).decode([b"\xff\xff\xff", written(good) + b"\x00", written(good)[:3], written(good)])
    assert decoded.values.is_valid().to_pylist() == [False, False, False, True]
    assert decoded.errors[0].startswith("value is not Avro of schema 'shop.Order' (")
    assert "1 byte(s) left over after the record" in decoded.errors[1]
    assert "EOFError" in decoded.errors[2]
    assert decoded.errors[3] is None


def test_avro_encoding_names_the_field_that_does_not_fit():
    fmt = AvroFormat({"type": "record", "name": "V", "fields": [{"name": "n", "type": "long"}]})
    coded = fmt.encode(pa.array([{"n": 3}, {"n": None}], pa.struct([("n", pa.int64())])))
    assert coded.values.to_pylist() == [written({"n": 3}, fmt.schema), None]
    assert coded.errors == [None, "value does not fit Avro schema 'V': Field(V.n) is None expected long"]
    wrong = fmt.encode(pa.array([{"n": "x"}], pa.struct([("n", pa.string())])))
    assert wrong.errors == ["value does not fit Avro schema 'V': V.n is <x> of type <class 'str'> expected long"]


def test_avro_reads_records_of_an_older_schema_with_a_newer_reader_schema():
    v1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}, {"name": "gone", "type": "string"}]}
    v2 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"}, {"name": "plan", "type": "string", "default": "free"}]}
    fmt = AvroFormat(v1, reader_schema=v2)
    assert fmt.value_type == pa.struct([("id", pa.int64()), ("plan", pa.string())])
    assert fmt.decode([written({"id": 3, "gone": "x"}, v1)]).values.to_pylist() == [{"id": 3, "plan": "free"}]


def test_avro_schema_from_json_text_and_an_avsc_file(tmp_path):
    path = tmp_path / "order.avsc"
    path.write_text(json.dumps(ORDER))
    assert AvroFormat(path).value_type == AvroFormat(json.dumps(ORDER)).value_type == AvroFormat(ORDER).value_type


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AvroFormat({"type": "record", "name": "X", "fields": [{"name": "a", "type": "strng"}]}), "not a valid Avro schema: UnknownType: strng"),
        (lambda: AvroFormat("{not json"), "the schema is not valid JSON"),
        (lambda: AvroFormat("/nowhere/x.avsc"), "cannot read the schema from /nowhere/x.avsc"),
        (lambda: AvroFormat({"type": "record", "name": "X", "fields": [{"name": "a", "type": ["int", "string"]}]}), "several non-null branches"),
        (
            lambda: AvroFormat({"type": "record", "name": "U", "fields": [{"name": "id", "type": "int"}]},
                               reader_schema={"type": "record", "name": "U", "fields": [{"name": "plan", "type": "string"}]}),
            "cannot be read with the reader schema: No default value for field plan",
        ),
        (lambda: JsonFormat({"a": "str"}), "field 'a' has type 'str'; use one of"),
        (lambda: JsonFormat({}), "fields are a mapping of field name to type"),
        (lambda: JsonFormat({"a": "long"}, optional=["b"]), r"optional names \['b'\], which are not declared fields"),
    ],
)
def test_a_bad_schema_fails_where_the_format_is_built(make, message):
    with pytest.raises(TopologyError, match=message):
        make()


def test_json_checks_declared_fields_strictly_and_ignores_undeclared_ones():
    fmt = JsonFormat({"user": "string", "n": "long", "score": "double", "ok": "boolean"}, optional=["score"])
    raws = [
        b'{"user": "a", "n": 1, "score": 2, "ok": true, "extra": [1]}',
        b'{"user": "a", "n": 1.5, "ok": true}',
        b'{"user": "a", "n": true, "ok": true}',
        b'{"user": "a", "n": "1", "ok": true}',
        b'{"user": "a", "ok": false}',
        b'[1, 2]',
        b"\xff",
        None,
    ]
    decoded = JsonFormat.decode(fmt, raws)
    assert decoded.values.to_pylist()[0] == {"user": "a", "n": 1, "score": 2.0, "ok": True}
    assert decoded.values.to_pylist()[1:] == [None] * 7
    assert decoded.errors == [
        None,
        "field 'n' is 1.5 (float), not int64",
        "field 'n' is true (bool), not int64",
        "field 'n' is \"1\" (str), not int64",
        "value misses required field(s) ['n']",
        "value is not a JSON object: [1, 2]",
        decoded.errors[6],
        None,
    ]
    assert decoded.errors[6].startswith("value is not JSON: UnicodeDecodeError")


def test_json_declared_with_a_pyarrow_schema_round_trips_nested_values():
    schema = pa.schema([("id", pa.int64()), ("address", pa.struct([("city", pa.string())])), ("tags", pa.list_(pa.string()))])
    fmt = JsonFormat(schema)
    value = {"id": 1, "address": {"city": "Oslo"}, "tags": ["x"]}
    encoded = fmt.encode(pa.array([value, None], fmt.value_type))
    assert encoded.errors == [None, None] and json.loads(encoded.values[0].as_py()) == value
    assert fmt.decode(encoded.values.to_pylist()).values.to_pylist() == [value, None]
    assert fmt.decode([b'{"id": 1, "address": {"city": 5}, "tags": []}']).errors == ["field 'address' is {\"city\": 5} (dict), not struct<city: string>"]
