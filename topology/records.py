"""The records that flow along a topology's edges, as every engine and user function sees them.

A record has a ``timestamp`` (epoch ms, its event time), a ``key`` and a ``value``; the records of
a windowed table also carry their window's ``window_start`` and ``window_end``. Python callables
receive a windowed key as :class:`Windowed`. Defined here, below the processing core and the DSL,
so that both use the same names.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pyarrow as pa

from deltastreams.sinks.serde import HEADERS, HEADERS_TYPE, Headers, headers_array, headers_of

__all__ = ["HEADERS", "HEADERS_TYPE", "Headers", "KEY", "REJECTED", "TIMESTAMP", "VALUE", "WINDOW_END", "WINDOW_START", "Windowed", "headers_array", "headers_of"]

TIMESTAMP = "timestamp"
WINDOW_START = "window_start"
WINDOW_END = "window_end"
KEY = "key"
VALUE = "value"
REJECTED = "_rejected"
DEAD_LETTER_VALUE = pa.struct(
    [
        ("value", pa.string()),
        ("source_topic", pa.string()),
        ("source_partition", pa.int32()),
        ("source_offset", pa.int64()),
        ("node", pa.string()),
        ("task", pa.string()),
        ("reason", pa.string()),
    ]
)
"""The value of a dead-letter record: the rejected value, where it came from, and why."""
"""Optional column of records handed to the processing core: why an engine's step before the
core found the record bad, or null. The core sends marked records to the dead-letter topic."""


class Windowed(NamedTuple):
    """The key of a windowed aggregation's result: the record key and its window ``[start, end)``."""

    key: Any
    window_start: int
    window_end: int

