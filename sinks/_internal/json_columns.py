"""Flat JSON objects into a struct column with the parser in C (``json_columns.c``): the fast path
for JSON values, tried before Arrow's JSON reader.

The parser takes objects whose fields are strings, integers, booleans or null, and declines the
whole batch at anything else (escapes, nesting, a number that does not fit, not JSON): then
:func:`flat_objects` returns None and the caller goes on to the general paths, which name the
records they reject. It is built at install time when a C compiler is there (setup.py: optional).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

try:
    from deltastreams.sinks._internal import _json_columns
except ImportError:  # no C compiler at install time: Arrow's JSON reader does it all
    _json_columns = None

_STRING, _INT8, _INT16, _INT32, _INT64, _BOOL = range(6)
_KINDS = {pa.string(): _STRING, pa.int8(): _INT8, pa.int16(): _INT16, pa.int32(): _INT32, pa.int64(): _INT64, pa.bool_(): _BOOL}
_MAX_FIELDS = 64


def flat_objects(raw: pa.Array, target: pa.StructType) -> pa.StructArray | None:
    """``raw`` (binary, one JSON object per record, null records null rows) as ``target``; None
    when the parser is not built, ``target`` has a field type it does not fill, or a record is not
    a flat object it takes on."""
    fields = _fields(target)
    if _json_columns is None or fields is None or not len(raw):
        return None
    valid = raw.is_valid().to_numpy(zero_copy_only=False) if raw.null_count else None
    validity = None if valid is None else np.packbits(valid, bitorder="little").tobytes()
    data = raw.buffers()[2]
    offsets = raw.buffers()[1][raw.offset * 4 : (raw.offset + len(raw) + 1) * 4]
    columns = _json_columns.parse(data if data is not None else b"", offsets, validity, len(raw), fields)
    if columns is None:
        return None
    children = [_child(field.type, len(raw), column) for field, column in zip(target, columns, strict=True)]
    try:
        for child in children:
            if child.type == pa.string():
                child.validate(full=True)  # the parser copies strings' bytes as they are: Arrow checks UTF-8
    except pa.ArrowInvalid:
        return None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=None if valid is None else pa.array(~valid))


def _fields(target: pa.StructType) -> list[tuple[bytes, int]] | None:
    if target.num_fields > _MAX_FIELDS:
        return None
    kinds = [(field.name.encode(), _KINDS.get(field.type)) for field in target]
    return None if any(kind is None for _, kind in kinds) else kinds


def _child(type_: pa.DataType, rows: int, column: tuple) -> pa.Array:
    validity, nulls, *buffers = column
    return pa.Array.from_buffers(type_, rows, [pa.py_buffer(validity), *(pa.py_buffer(b) for b in buffers)], null_count=nulls)
