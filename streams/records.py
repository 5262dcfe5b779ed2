"""Record shapes users see from Python callables and the test driver."""

from __future__ import annotations

from typing import Any, NamedTuple


class Windowed(NamedTuple):
    """The key of a windowed aggregation's result: the record key and its window ``[start, end)``."""

    key: Any
    window_start: int
    window_end: int
