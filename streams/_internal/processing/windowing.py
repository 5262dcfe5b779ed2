"""Kafka's window semantics, vectorised over a batch of timestamps.

Stream time as seen by record i is the running maximum of the timestamps up to and including i
(and of the stream time before the batch): one ``np.maximum.accumulate``. A record belongs to every
window ``[start, start + size)`` with ``start`` a multiple of ``advance``, ``start >= 0`` and
``start <= t < start + size`` (Kafka's ``TimeWindows.windowsFor``). It updates a window unless
``end + grace <= stream time`` (Kafka's ``closeTime`` check); otherwise it is dropped for that
window and counted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from deltastreams.state import NO_STREAM_TIME
from deltastreams.topology.nodes import Windows

_LAST_EMIT_KEY = b"\xff\xfflast-emitted-close-time"
_LONG = struct.Struct(">q")


@dataclass(frozen=True)
class WindowAssignment:
    """One row per (record, window) pair, in processing order: by record, then window start."""

    record: np.ndarray
    start: np.ndarray
    end: np.ndarray
    late: np.ndarray
    stream_time: np.ndarray
    """Stream time after each record (per record, not per pair)."""

    @property
    def final_stream_time(self) -> int | None:
        return int(self.stream_time[-1]) if len(self.stream_time) else None


def running_stream_time(timestamps: np.ndarray, previous: int) -> np.ndarray:
    return np.maximum.accumulate(np.maximum(timestamps, previous)) if len(timestamps) else timestamps


def assign_windows(timestamps: np.ndarray, windows: Windows, previous_stream_time: int, lateness_times: np.ndarray | None = None) -> WindowAssignment:
    """``lateness_times``: the stream time each record's lateness is judged by, if not the
    running one (a cogroup's, per input)."""
    size, advance, grace = windows.size_ms, windows.advance_ms, windows.grace_ms
    ts = timestamps.astype(np.int64, copy=False)
    stream_time = running_stream_time(ts, previous_stream_time)
    first = (np.maximum(0, ts - size + advance) // advance) * advance
    per_record = np.where(ts >= 0, (ts - first) // advance + 1, 0)
    record = np.repeat(np.arange(len(ts)), per_record)
    within = np.arange(len(record)) - np.repeat(np.cumsum(per_record) - per_record, per_record)
    start = first[record] + within * advance
    end = start + size
    late = end + grace <= (stream_time if lateness_times is None else lateness_times)[record]
    return WindowAssignment(record, start, end, late, stream_time)


def segmented_running_max(values: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at every new segment id (``segments`` sorted)."""
    if len(values) == 0:
        return values
    low = int(values.min())
    span = int(values.max()) - low + 1
    if span * (int(segments.max()) + 1) < 2**62:
        # Lift each segment above all earlier ones, so one cumulative max never crosses segments.
        lifted = (values - low) + segments.astype(np.int64) * span
        return np.maximum.accumulate(lifted) - segments.astype(np.int64) * span + low
    out = values.copy()
    for i in range(1, len(values)):  # ranges too wide to lift: plain loop, same result
        if segments[i] == segments[i - 1] and out[i - 1] > out[i]:
            out[i] = out[i - 1]
    return out


def last_emitted_close(store) -> int | None:
    """Emit-final's mark, kept in the aggregation's store (a changelogging key-value store): the
    close time up to which final results have gone out; None before the first."""
    raw = store.get(_LAST_EMIT_KEY)
    return None if raw is None else _LONG.unpack(raw)[0]


def remember_emitted_close(store, close: int | None) -> None:
    if close is not None:
        store.put(_LAST_EMIT_KEY, _LONG.pack(close))


_INPUT_STREAM_TIME_KEY = b"\xff\xffinput-stream-time:"
_LATEST_START_KEY = b"\xff\xfflatest-window-start"


def latest_window_start(store) -> int | None:
    """A cogroup's latest window start written to its store (its retention runs from it)."""
    raw = store.get(_LATEST_START_KEY)
    return None if raw is None else _LONG.unpack(raw)[0]


def remember_latest_window_start(store, start: int) -> None:
    store.put(_LATEST_START_KEY, _LONG.pack(start))


class InputStreamTimes:
    """A cogroup's stream time per input, kept in its store: Kafka gives each cogrouped stream a
    windowed-aggregate processor of its own, with its own observed stream time, so a record is
    late when its window closed by the stream time of *its* input, whatever the other inputs have
    seen (all of them still share one store, and its retention)."""

    def __init__(self, store) -> None:  # a ChangeLoggingStore
        self.store = store

    def get(self, index: int) -> int:
        raw = self.store.get(_INPUT_STREAM_TIME_KEY + str(index).encode())
        return NO_STREAM_TIME if raw is None else _LONG.unpack(raw)[0]

    def observe(self, index: int, timestamp: int) -> int:
        """Input ``index`` saw a record at ``timestamp``: its stream time after it."""
        time = max(self.get(index), timestamp)
        self.store.put(_INPUT_STREAM_TIME_KEY + str(index).encode(), _LONG.pack(time))
        return time

    def running(self, inputs: np.ndarray, timestamps: np.ndarray) -> np.ndarray:
        """The stream time of each record's input after it (records in order), remembered."""
        times = np.empty(len(timestamps), dtype=np.int64)
        for index in np.unique(inputs):
            mine = np.flatnonzero(inputs == index)
            times[mine] = running_stream_time(timestamps[mine].astype(np.int64, copy=False), self.get(int(index)))
            self.store.put(_INPUT_STREAM_TIME_KEY + str(int(index)).encode(), _LONG.pack(int(times[mine[-1]])))
        return times
