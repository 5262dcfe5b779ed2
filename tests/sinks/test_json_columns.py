"""The JSON parser in C (sinks/_internal/json_columns.c) and the column-wise decoding it leads,
held to the per-record path (json.loads + pyarrow, which names each record it rejects): on random
values built from valid and broken fragments, whatever a column-wise path returns must be what
the per-record path gives, with no record rejected there. A parser that declined everything would
pass that, so valid flat objects must also be taken by the parser."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.sinks import kafka
from deltastreams.sinks._internal import json_columns, kafka_arrow

TARGET = pa.struct([("user", pa.string()), ("n", pa.int64()), ("small", pa.int8()), ("mid", pa.int32()), ("flag", pa.bool_())])

pytestmark = pytest.mark.skipif(json_columns._json_columns is None, reason="the JSON parser in C was not built (no C compiler)")

_STRINGS = ['"a"', '""', '"page-17"', '"é"', '"日本"', '"a\\"b"', '"a\\\\b"', '"\\u00e9"', '"\\ud800"', '"tab\there"', '"\xff"', '"\x7f"', '"a/b"']
_NUMBERS = ["0", "-0", "7", "-128", "127", "128", "-129", "2147483647", "2147483648", "-9223372036854775808",
            "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.0", "1e3", "1E-2", "01", "-", "1.", ".5", "NaN", "Infinity"]
_OTHERS = ["true", "false", "null", "tru", "nul", "[]", "[1, 2]", "{}", '{"a": 1}']
_KEYS = ["user", "n", "small", "mid", "flag", "other", "é", "us\\u0065r", "", "flag "]


def _value(rng: random.Random) -> str:
    return rng.choice(rng.choice([_STRINGS, _NUMBERS, _OTHERS]))


def _ws(rng: random.Random) -> str:
    return rng.choice(["", "", "", " ", "\n", " \t\r\n "])


def _broken_object(rng: random.Random) -> bytes:
    fields = [f'{_ws(rng)}"{rng.choice(_KEYS)}"{_ws(rng)}:{_ws(rng)}{_value(rng)}{_ws(rng)}' for _ in range(rng.randrange(6))]
    text = _ws(rng) + "{" + ",".join(fields) + "}" + _ws(rng)
    roll = rng.random()
    if roll < 0.03:
        text = text[: rng.randrange(len(text))]  # cut short
    elif roll < 0.06:
        text += rng.choice(["{}", "x", ",", "}"])  # trailing text
    elif roll < 0.08:
        text = rng.choice(["[]", '"x"', "5", "null", "", " ", '[["user", "a"]]'])  # not an object
    elif roll < 0.1:
        text = text.replace(",", ",,", 1) if "," in text else text.replace("}", ",}")
    return text.encode("utf-8", "surrogateescape") if "\xff" not in text else text.replace("\xff", "").encode() + b"\xff"


def _valid_object(rng: random.Random) -> bytes:
    values = {
        "user": lambda: rng.choice(['"a"', '"page-17"', '"é"', '""', "null"]),
        "n": lambda: str(rng.randrange(-(2**63), 2**63)),
        "small": lambda: str(rng.randrange(-128, 128)),
        "mid": lambda: str(rng.randrange(-(2**31), 2**31)),
        "flag": lambda: rng.choice(["true", "false", "null"]),
        "other": lambda: rng.choice(['"x"', "1.5e3", "-0", "true", "null"]),
    }
    names = rng.sample(sorted(values), rng.randrange(len(values) + 1))
    return ("{" + ",".join(f'{_ws(rng)}"{name}"{_ws(rng)}:{_ws(rng)}{values[name]()}' for name in names) + _ws(rng) + "}").encode()


def _per_record(raw: list[bytes | None]) -> tuple[list, list]:
    decoded, errors = kafka._decode_each(raw, "json", TARGET)
    return decoded.to_pylist(), errors


@pytest.mark.parametrize("seed", range(4))
def test_column_wise_json_gives_what_the_per_record_path_gives(seed):
    rng = random.Random(seed)
    taken_by_c = 0
    for _ in range(500):
        raw = [None if rng.random() < 0.05 else _broken_object(rng) for _ in range(rng.randrange(1, 5))]
        array = pa.array(raw, pa.binary())
        expected, errors = _per_record(raw)
        flat = json_columns.flat_objects(array, TARGET)
        if flat is not None:
            taken_by_c += 1
            assert not any(errors), (raw, errors)
            assert flat.to_pylist() == expected, raw
        column = kafka_arrow.decode_column(array, "json", TARGET)
        if column is not None:
            assert not any(errors), (raw, errors)
            assert column.to_pylist() == expected, raw
        decoded, decode_errors = kafka._decode_column(array, "json", TARGET)
        assert (decoded.to_pylist(), decode_errors) == (expected, errors)  # what a reader gets, whichever path
    assert taken_by_c >= 10  # the random batches do reach the parser's accepting paths


@pytest.mark.parametrize("seed", range(4))
def test_the_parser_takes_every_valid_flat_object(seed):
    rng = random.Random(seed)
    for _ in range(100):
        raw = [None if rng.random() < 0.1 else _valid_object(rng) for _ in range(rng.randrange(1, 20))]
        flat = json_columns.flat_objects(pa.array(raw, pa.binary()), TARGET)
        assert flat is not None, raw
        assert flat.to_pylist() == _per_record(raw)[0]


def test_a_slice_of_the_records_decodes_as_its_own_records():
    raw = pa.array([b'{"user": "a", "n": 1}', None, b'{"user": "b", "n": 2}', b'{"n": 3}', None], pa.binary())
    assert json_columns.flat_objects(raw.slice(1, 3), TARGET).to_pylist() == [
        None,
        {"user": "b", "n": 2, "small": None, "mid": None, "flag": None},
        {"user": None, "n": 3, "small": None, "mid": None, "flag": None},
    ]


@pytest.mark.parametrize(
    "value",
    [b'{"user": "a\\"b"}', b'{"n": 1.0}', b'{"n": [1]}', b'{"n": 1, "n": 2}', b'{"n": 1} x', b'{"small": 128}', b'{"user": 5}', b'{"flag": 1}', b'[]'],
    ids=["escape", "fraction", "nested", "repeated", "trailing", "out of range", "wrong type", "number for a boolean", "array"],
)
def test_the_parser_declines_what_it_does_not_take_on(value):
    assert json_columns.flat_objects(pa.array([b'{"n": 1}', value], pa.binary()), TARGET) is None


def test_strings_that_are_not_utf8_are_declined_by_every_column_wise_path_and_named_per_record():
    raw = [b'{"user": "ok"}', b'{"user": "\xff"}']
    array = pa.array(raw, pa.binary())
    assert json_columns.flat_objects(array, TARGET) is None
    assert kafka_arrow.decode_column(array, "json", TARGET) is None  # Arrow's JSON reader let it through before
    decoded, errors = kafka._decode_column(array, "json", TARGET)
    assert decoded.to_pylist()[0]["user"] == "ok" and decoded.to_pylist()[1] is None
    assert errors[0] is None and "UnicodeDecodeError" in errors[1]


def test_a_target_with_a_type_the_parser_does_not_fill_goes_to_arrows_reader():
    target = pa.struct([("user", pa.string()), ("score", pa.float64())])
    array = pa.array([b'{"user": "a", "score": 0.5}'], pa.binary())
    assert json_columns.flat_objects(array, target) is None
    assert kafka_arrow.decode_column(array, "json", target).to_pylist() == [{"user": "a", "score": 0.5}]


@pytest.mark.parametrize(
    ("value", "why"),
    [(b"[]", "a JSON array, not an object"), (b'"x"', "a JSON string, not an object"), (b'{"user": "\\ud800"}', "surrogates not allowed")],
)
def test_the_per_record_path_names_values_that_are_not_objects_or_not_strings(value, why):
    decoded, errors = kafka._decode([value], "json", TARGET)
    assert decoded.to_pylist() == [None]
    assert why in errors[0]
