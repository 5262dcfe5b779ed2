"""Key bytes as Kafka's serializers write them, so partitioning and store keys match Kafka.

strings -> UTF-8 (StringSerializer); binary -> as is; 8/16/32-bit integers -> 4 bytes big-endian
(IntegerSerializer); 64-bit integers -> 8 bytes big-endian (LongSerializer); float32/float64 ->
IEEE big-endian (FloatSerializer/DoubleSerializer); booleans -> one byte; anything else (structs,
lists, dates) -> canonical JSON in UTF-8 (sorted keys, no spaces), as a JSON serde would.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.types as pat

_INT32_TYPES = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())
_INT64_TYPES = (pa.int64(), pa.uint32())


def _fixed_width(values: pa.Array, numpy_dtype: str) -> list[bytes | None]:
    width = np.dtype(numpy_dtype).itemsize
    raw = values.fill_null(0).to_numpy(zero_copy_only=False).astype(numpy_dtype).tobytes()
    out: list[bytes | None] = [raw[i : i + width] for i in range(0, len(raw), width)]
    if values.null_count:
        for i, valid in enumerate(values.is_valid().to_pylist()):
            if not valid:
                out[i] = None
    return out


def json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    return str(value)


def json_bytes(value: Any) -> bytes:
    """Canonical JSON of a Python value (the serde of composite keys)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=json_default).encode()


def key_bytes(values: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    """Serialize every value of an Arrow array the way Kafka's matching serializer would."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if pat.is_dictionary(t):
        return key_bytes(values.dictionary_decode())
    if pat.is_string(t) or pat.is_large_string(t):
        return values.cast(pa.large_binary()).to_pylist()  # the UTF-8 bytes, without a str per value
    if pat.is_string_view(t):
        return [None if s is None else s.encode() for s in values.to_pylist()]
    if pat.is_binary(t) or pat.is_large_binary(t) or pat.is_fixed_size_binary(t) or pat.is_binary_view(t):
        return values.to_pylist()
    if t in _INT32_TYPES:
        return _fixed_width(values, ">i4")
    if t in _INT64_TYPES:
        return _fixed_width(values, ">i8")
    if pat.is_float64(t):
        return _fixed_width(values, ">f8")
    if pat.is_float32(t):
        return _fixed_width(values, ">f4")
    if pat.is_boolean(t):
        return [None if b is None else (b"\x01" if b else b"\x00") for b in values.to_pylist()]
    return [None if v is None else json_bytes(v) for v in values.to_pylist()]


def key_from_bytes(raw: bytes, type_: pa.DataType) -> Any:
    """The Python value :func:`key_bytes` serialized as ``raw`` for Arrow type ``type_``."""
    if pat.is_dictionary(type_):
        return key_from_bytes(raw, type_.value_type)
    if pat.is_string(type_) or pat.is_large_string(type_) or pat.is_string_view(type_):
        return raw.decode()
    if pat.is_binary(type_) or pat.is_large_binary(type_) or pat.is_fixed_size_binary(type_) or pat.is_binary_view(type_):
        return raw
    if type_ in _INT32_TYPES:
        return int(np.frombuffer(raw, ">i4")[0])
    if type_ in _INT64_TYPES:
        return int(np.frombuffer(raw, ">i8")[0])
    if pat.is_float64(type_):
        return float(np.frombuffer(raw, ">f8")[0])
    if pat.is_float32(type_):
        return float(np.frombuffer(raw, ">f4")[0])
    if pat.is_boolean(type_):
        return raw == b"\x01"
    return json.loads(raw)


def array_from_key_bytes(raws: list[bytes | None] | pa.Array, type_: pa.DataType) -> pa.Array:
    """The inverse of :func:`key_bytes` for a whole array (None: null): typed stores read a batch of
    values with one call, so fixed-width and string types decode without a Python object each."""
    binary = raws if isinstance(raws, pa.Array) else pa.array(raws, pa.large_binary())
    if pat.is_dictionary(type_):
        return array_from_key_bytes(binary, type_.value_type).dictionary_encode()
    if pat.is_string(type_) or pat.is_large_string(type_) or pat.is_binary(type_) or pat.is_large_binary(type_):
        return binary.cast(type_)
    width_dtype = _fixed_width_dtype(type_)
    if width_dtype is None:
        return pa.array([None if raw is None else key_from_bytes(raw, type_) for raw in binary.to_pylist()], type=type_)
    dtype = np.dtype(width_dtype)
    present = binary.drop_null()
    lengths = pa.compute.binary_length(present).to_numpy(zero_copy_only=False)
    if len(lengths) and (lengths != dtype.itemsize).any():
        raise ValueError(f"values of type {type_} are {dtype.itemsize} bytes; found one of {int(lengths[lengths != dtype.itemsize][0])}")
    data = present.combine_chunks() if isinstance(present, pa.ChunkedArray) else present
    decoded = np.frombuffer(data.buffers()[2], dtype=dtype, count=len(data), offset=_first_offset(data)) if len(data) else np.empty(0, dtype)
    if pat.is_boolean(type_):
        decoded = decoded != 0
    if not binary.null_count:
        return pa.array(decoded.astype(decoded.dtype.newbyteorder("=")), type=type_)
    valid = np.asarray(binary.is_valid())
    full = np.zeros(len(binary), dtype=decoded.dtype.newbyteorder("="))
    full[valid] = decoded
    return pa.array(full, type=type_, mask=~valid)


def _fixed_width_dtype(type_: pa.DataType) -> str | None:
    if type_ in _INT32_TYPES:
        return ">i4"
    if type_ in _INT64_TYPES:
        return ">i8"
    if pat.is_float64(type_):
        return ">f8"
    if pat.is_float32(type_):
        return ">f4"
    if pat.is_boolean(type_):
        return "u1"
    return None


def _first_offset(data: pa.Array) -> int:
    """Where the first value starts in a binary array's data buffer (after slicing)."""
    offsets = np.frombuffer(data.buffers()[1], dtype=np.int64 if pat.is_large_binary(data.type) else np.int32)
    return int(offsets[data.offset])


def key_bytes_of(value: Any, type_: pa.DataType) -> bytes:
    """Serialize one Python value of Arrow type ``type_``."""
    out = key_bytes(pa.array([value], type=type_))[0]
    if out is None:
        raise ValueError("cannot serialize a null key")
    return out


# -- record headers -------------------------------------------------------------------------------

HEADERS = "headers"
"""Optional column of a record: its headers, Kafka's ordered ``(key, bytes)`` pairs (keys may
repeat); null or empty: none. Python code sees them as a tuple of pairs."""
HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
Headers = tuple[tuple[str, bytes], ...]


def headers_array(rows: Sequence[Iterable[tuple[str, bytes]] | None]) -> pa.Array:
    """The HEADERS column of records whose headers are ``rows`` (None: no headers)."""
    return pa.array([None if h is None else [{"key": k, "value": v} for k, v in h] for h in rows], HEADERS_TYPE)


def headers_of(column: pa.Array | pa.ChunkedArray) -> list[Headers]:
    """A HEADERS column as Python tuples (no headers: an empty tuple)."""
    return [() if h is None else tuple((e["key"], e["value"]) for e in h) for h in column.to_pylist()]
