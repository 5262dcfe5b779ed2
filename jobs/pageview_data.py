"""Synthetic pageview events: the paper's running example's input.

Events are keyed by ``user_id``; their value is ``{user_id, page_id, category, duration_s}``. Event
time advances steadily (``events_per_second`` of event time), or is the wall-clock time of the
append for a live stream (``event_time_ms``), and a share of the events is delayed by up to
``max_lateness_ms``, so the stream is out of order and some events arrive after their window's
grace period.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CATEGORIES = tuple(f"category-{i:02d}" for i in range(50))
VALUE_TYPE = pa.struct(
    [("user_id", pa.string()), ("page_id", pa.string()), ("category", pa.string()), ("duration_s", pa.int32())]
)
START_MS = 1_700_000_000_000


def _labels(prefix: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers), pa.string()), "")


def generate_events(
    n: int,
    *,
    seed: int = 0,
    late_fraction: float = 0.05,
    max_lateness_ms: int = 30_000,
    events_per_second: int = 10_000,
    users: int = 100_000,
    first_index: int = 0,
    event_time_ms: int | None = None,
) -> pa.Table:
    """``n`` events in record form (``key``, ``value``, ``timestamp``), in append order.

    ``first_index`` continues an earlier call's event-time clock (for appending in parts) and
    seeds the draw, so a position in the stream always gets the same event. ``event_time_ms``
    stamps every event with that time instead (before delays): events appended now."""
    rng = np.random.default_rng([seed, first_index])
    if event_time_ms is None:
        index = np.arange(first_index, first_index + n, dtype=np.int64)
        timestamps = START_MS + index * 1000 // events_per_second
    else:
        timestamps = np.full(n, event_time_ms, dtype=np.int64)
    delayed = rng.random(n) < late_fraction
    timestamps = timestamps - np.where(delayed, rng.integers(0, max_lateness_ms + 1, n), 0)
    user_ids = _labels("user-", rng.integers(0, users, n))
    pages = _labels("page-", rng.integers(0, 1000, n))
    categories = pa.array(CATEGORIES).take(pa.array(rng.integers(0, len(CATEGORIES), n)))
    durations = pa.array(rng.integers(0, 121, n).astype(np.int32))
    value = pa.StructArray.from_arrays([user_ids, pages, categories, durations], fields=list(VALUE_TYPE))
    return pa.table({"key": user_ids, "value": value, "timestamp": pa.array(timestamps, pa.int64())})
