"""Where value formats meet the processing core: bytes in at a source, bytes out at a sink.

A source with a ``value_format`` hands the core records whose ``value`` is the encoded bytes (a
binary column, or a string column of JSON text written by another system); :func:`decode_values`
turns them into the format's struct before the timestamp extractor or any operator sees them. A
record that does not decode keeps a null value and is marked ``REJECTED`` with the reason, and
its raw bytes travel in ``RAW_VALUE`` so the dead-letter topic shows what arrived, not a null.
:func:`encode_values` is the sink's side: values that do not fit the format go to the bad records.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from deltastreams.conf.errors import SchemaMismatchError
from deltastreams.sinks.formats import ValueFormat
from deltastreams.streams._internal.processing.flow import BadRecords, Flow
from deltastreams.topology.records import REJECTED, VALUE

RAW_VALUE = "_raw_value"
"""Optional column beside ``REJECTED``: what the dead-letter topic shows as the record's value
(the bytes that did not decode: text if they are UTF-8 JSON, else hex)."""


def decode_values(topic: str, records: pa.Table, value_format: ValueFormat) -> pa.Table:
    """``records`` with their values decoded by ``value_format``; undecodable ones marked."""
    raw = records.column(VALUE)
    if pa.types.is_string(raw.type) or pa.types.is_large_string(raw.type):
        raw = raw.cast(pa.large_binary())
    elif not (pa.types.is_binary(raw.type) or pa.types.is_large_binary(raw.type) or pa.types.is_null(raw.type)):
        raise SchemaMismatchError(
            f"topic '{topic}' is read with value_format={type(value_format).__name__}, but its values are {raw.type}, not the "
            "encoded bytes (binary): write the topic's values encoded, or drop value_format to read them as they are",
            topic=topic,
            column=VALUE,
        )
    raws = raw.to_pylist()
    coded = value_format.decode(raws)
    previous = records.column(REJECTED).to_pylist() if REJECTED in records.column_names else [None] * len(raws)
    reasons = [before or now for before, now in zip(previous, coded.errors, strict=True)]
    shown = [_shown(value_format, data) if error else None for data, error in zip(raws, coded.errors, strict=True)]
    table = records.set_column(records.schema.get_field_index(VALUE), VALUE, coded.values)
    table = _with_column(table, REJECTED, pa.array(reasons, pa.string()))
    return _with_column(table, RAW_VALUE, pa.array(shown, pa.string()))


def encode_values(node: str, flow: Flow, value_format: ValueFormat, bad: BadRecords) -> Flow:
    """``flow`` with its values encoded; a value that does not fit goes to ``bad``."""
    values = flow.table.column(VALUE)
    coded = value_format.encode(values)
    failed = np.array([e is not None for e in coded.errors], dtype=bool)
    encoded = flow.replace(values=coded.values)
    if not failed.any():
        return encoded
    seqs, keys, shown = flow.seqs, flow.keys(), flow.values()
    for i in np.flatnonzero(failed):
        bad.reject(seqs[i], node, coded.errors[i], keys[i], shown[i])
    return encoded.filter(~failed)


def _shown(value_format: ValueFormat, data: bytes | None) -> str | None:
    if data is None:
        return None
    text = value_format.raw_text(data)
    return text if isinstance(text, str) else bytes(text).hex()


def _with_column(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, column)
    return table.append_column(name, column)
