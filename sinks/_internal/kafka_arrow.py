"""Kafka offset ranges as Arrow columns, through the C reader (``kafka_range.c``), and keys and
values decoded column by column.

confluent-kafka hands Python one ``Message`` per record, and reading one takes five method
calls: ~80k records/s per partition, where librdkafka itself delivers several times that. The C
reader polls librdkafka's consumer itself and returns Arrow's buffers, one ``bytes`` per column;
here they become arrays without a copy. The reader is built at install time when a C compiler is
there (setup.py: optional); without it :func:`read_raw` returns None and ``sinks.kafka`` reads
through confluent-kafka's objects, after one warning in the log.

The decoders return None where a record needs the per-record path (a value that is not UTF-8, not
8 bytes for a long, JSON that neither the parser in C (``json_columns``) nor Arrow's JSON reader
takes): that path names the records it rejects.
"""

from __future__ import annotations

import ctypes.util
import io
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.sinks._internal import json_columns
from deltastreams.sinks._internal.idle_clients import IdleClients
from deltastreams.sinks.serde import HEADERS_TYPE

log = logging.getLogger(__name__)

_OK, _OFFSET_OUT_OF_RANGE, _KAFKA_ERROR, _TIMED_OUT, _CONFIG_ERROR, _TOO_LARGE = range(6)
_INT_WIDTHS = {"long": (8, pa.int64(), ">i8"), "int": (4, pa.int32(), ">i4")}

_lock = threading.Lock()
_reader: Any = None
_loaded = False


class RangeReadError(Exception):
    """The C reader stopped: ``kind`` is ``offset_out_of_range``, ``kafka`` (librdkafka's error
    in ``detail``) or ``timed_out``; ``rows`` how many records it had read by then."""

    def __init__(self, kind: str, detail: str, rows: int) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail, self.rows = kind, detail, rows


@dataclass(frozen=True)
class RawRecords:
    """One range's records: offsets and timestamps (int64), keys and values (binary, null for a
    null key or value), headers (:data:`HEADERS_TYPE`, null for none)."""

    offsets: pa.Array
    timestamps: pa.Array
    keys: pa.Array
    values: pa.Array
    headers: pa.Array


def librdkafka_path() -> str | None:
    """The librdkafka confluent-kafka uses: the copy its wheel bundles, else the system's."""
    try:
        import confluent_kafka
    except ImportError:
        return None
    bundled = sorted((Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs").glob("librdkafka*.so*"))
    return str(bundled[0]) if bundled else ctypes.util.find_library("rdkafka")


def reader():
    """The C reader with librdkafka loaded, or None (logged once) when it was not built or
    librdkafka cannot be found."""
    global _reader, _loaded
    with _lock:
        if not _loaded:
            _loaded = True
            try:
                from deltastreams.sinks._internal import _kafka_range
            except ImportError:
                log.warning(
                    "deltastreams' Kafka reader in C was not built (no C compiler when deltastreams was installed): "
                    "Kafka topics are read through Python objects, at about half the records/s; install gcc and reinstall deltastreams"
                )
                return None
            path = librdkafka_path()
            try:
                if path is None:
                    raise OSError("confluent-kafka's librdkafka not found")
                _kafka_range.open_library(path)
            except OSError as e:
                log.warning("deltastreams' Kafka reader in C cannot load librdkafka (%s): Kafka topics are read through Python objects", e)
                return None
            _reader = _kafka_range
    return _reader


def native_settings(settings: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """librdkafka's settings as strings, as confluent-kafka passes them; None if one is not a
    plain value (a callback such as ``error_cb`` only confluent-kafka's client can call)."""
    pairs = []
    for name, value in settings.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int | float | str):
            value = str(value)
        else:
            return None
        pairs.append((name, value))
    return pairs


_consumers: IdleClients[Any] = IdleClients(lambda consumer: _reader.close_consumer(consumer), most_per_key=1)
"""The C reader's consumers between reads, one per (settings, topic, partition): a task's next
range starts where its last ended, so a kept consumer has most of it fetched already and needs
no new client, connection and metadata (the pageview job from Kafka at 100 ms, one run each:
6.2 s against 6.8 s at 1M events, 21.0 against 22.8 s at 5M)."""


def close_consumers() -> None:
    """Close every consumer kept between reads in this process."""
    _consumers.close_all()


def read_raw(settings: Mapping[str, Any], topic: str, partition: int, start: int, end: int, timeout_s: float) -> RawRecords | None:
    """The records of ``partition`` with offsets in ``[start, end)``; None when the C reader cannot
    read it (not built, settings it cannot pass, a range over 2 GiB): then read it in Python."""
    native = reader()
    pairs = native_settings(settings)
    if native is None or pairs is None:
        return None
    key = (tuple(pairs), topic, partition)
    consumer = _consumers.take(key)
    if consumer is None:
        status, detail, consumer = native.open_consumer(pairs, topic, partition)
        if status != _OK:  # a setting librdkafka refused: Python says which
            log.info("Kafka reader in C gave up on %s[%d]: %s", topic, partition, detail)
            return None
    status, detail, rows, *columns = native.read(consumer, start, end, timeout_s)
    if status == _OK:
        _consumers.give_back(key, consumer)
    else:
        native.close_consumer(consumer)  # assigned afresh next time, like any new consumer
    if status == _OFFSET_OUT_OF_RANGE:
        raise RangeReadError("offset_out_of_range", detail, rows)
    if status == _KAFKA_ERROR:
        raise RangeReadError("kafka", detail, rows)
    if status == _TIMED_OUT:
        raise RangeReadError("timed_out", detail, rows)
    if status != _OK:  # a column over int32 offsets: Python reads it
        log.info("Kafka reader in C gave up on %s[%d] [%d, %d): %s", topic, partition, start, end, detail or "too large")
        return None
    return raw_records(rows, *columns)


def raw_records(rows: int, offsets: bytes, stamps: bytes, keys: tuple, values: tuple, headers: tuple) -> RawRecords | None:
    """The C reader's buffers as Arrow arrays, without a copy; None when a header name is not
    UTF-8 (the Python reader says what it does with it)."""
    try:
        header_array = _headers(rows, *headers)
    except pa.ArrowInvalid:
        return None
    return RawRecords(
        pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(stamps)]),
        _binary(rows, *keys),
        _binary(rows, *values),
        header_array,
    )


def _validity(bitmap: bytes, nulls: int) -> pa.Buffer | None:
    return pa.py_buffer(bitmap) if nulls else None


def _binary(rows: int, validity: bytes, offsets: bytes, data: bytes, nulls: int, type_: pa.DataType = pa.binary()) -> pa.Array:
    return pa.Array.from_buffers(type_, rows, [_validity(validity, nulls), pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def _headers(rows: int, validity: bytes, offsets: bytes, nulls: int, name_offsets: bytes, names: bytes, value_offsets: bytes, values: bytes) -> pa.Array:
    count = len(name_offsets) // 4 - 1
    name_array = _binary(count, b"", name_offsets, names, 0, pa.string())
    name_array.validate(full=True)  # header names are UTF-8 strings; Arrow checks it here, not when wrapping
    entries = pa.StructArray.from_arrays([name_array, _binary(count, b"", value_offsets, values, 0)], fields=list(HEADERS_TYPE.value_type))
    return pa.Array.from_buffers(HEADERS_TYPE, rows, [_validity(validity, nulls), pa.py_buffer(offsets)], null_count=nulls, children=[entries])


# -- decoding --------------------------------------------------------------------------------------


def decode_column(raw: pa.Array, fmt: str, target: pa.DataType) -> pa.Array | None:
    """``raw`` (binary) decoded as ``fmt`` into ``target``, column-wise; None when a record needs
    the per-record path."""
    if fmt == "bytes":
        return raw
    if fmt == "string" and target == pa.string():
        try:
            return raw.cast(pa.string())  # checks UTF-8
        except pa.ArrowInvalid:
            return None
    if fmt in _INT_WIDTHS and target == _INT_WIDTHS[fmt][1]:
        return _big_endian_ints(raw, *_INT_WIDTHS[fmt])
    if fmt == "json" and pa.types.is_struct(target) and len(raw):
        flat = json_columns.flat_objects(raw, target)
        if flat is not None or raw.null_count:
            return flat
        data, bounds = _data(raw)
        lines = np.insert(data, bounds[1:-1], ord("\n"))
        return json_objects(lines.tobytes(), len(raw), target)
    return None


def _data(raw: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The values' bytes back to back (a view of the array's buffer, not a copy) and their bounds
    in them (n + 1 offsets from 0)."""
    offsets = np.frombuffer(raw.buffers()[1], np.int32, count=len(raw) + 1, offset=raw.offset * 4)
    buffer = raw.buffers()[2]
    data = np.frombuffer(buffer, np.uint8)[offsets[0] : offsets[-1]] if buffer is not None else np.empty(0, np.uint8)
    return data, offsets - offsets[0]


def _big_endian_ints(raw: pa.Array, width: int, target: pa.DataType, dtype: str) -> pa.Array | None:
    if raw.null_count < len(raw) and not pc.all(pc.equal(pc.binary_length(raw), width)).as_py():
        return None
    data, _ = _data(raw)
    values = data.view(dtype).astype(target.to_pandas_dtype())
    if raw.null_count == 0:
        return pa.array(values, target)
    valid = raw.is_valid().to_numpy(zero_copy_only=False)
    spread = np.zeros(len(raw), values.dtype)
    spread[valid] = values  # a null value holds no bytes: the valid ones are back to back
    return pa.array(spread, target, mask=~valid)


def json_objects(lines: bytes, count: int, target: pa.StructType) -> pa.Array | None:
    """``count`` JSON objects, one per line, into a struct type with Arrow's JSON reader (~10x
    faster than ``json.loads`` per record); None when they are not ``count`` objects that fit, or
    when the text is not ``count`` lines each starting with ``{`` (a value spanning lines, or an
    empty one, also fails this). Arrow's reader reads objects, not lines: a blank line gives no
    row and a line holding two objects gives two, and the two together would still make
    ``count`` rows, each record given another's value."""
    text = np.frombuffer(lines, np.uint8)
    breaks = np.flatnonzero(text == ord("\n"))
    if len(breaks) != count - 1 or not len(text) or text[0] != ord("{") or (len(breaks) and breaks[-1] + 1 == len(text)):
        return None
    if not (text[breaks + 1] == ord("{")).all():  # ~20 ms per 500k values, where bytes.count(b"\n{") took 40
        return None
    from pyarrow import json as pajson

    options = pajson.ParseOptions(explicit_schema=pa.schema(list(target)), unexpected_field_behavior="ignore")
    try:
        table = pajson.read_json(io.BytesIO(lines), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_rows != count:
        return None
    objects = pa.StructArray.from_arrays([table.column(f.name).combine_chunks() for f in target], fields=list(target))
    try:
        objects.validate(full=True)  # Arrow's reader lets bytes that are not UTF-8 into strings
    except pa.ArrowInvalid:
        return None
    return objects
