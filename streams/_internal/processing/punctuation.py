"""Punctuation schedules of a user processor node, shared by the record-at-a-time and the batch
operators so both fire at the same moments.

A ``STREAM_TIME`` schedule fires, after a record, whenever the task's stream time (the largest
input timestamp so far, over all of the task's topics) has reached its next time, then moves on
by whole intervals past it, as Kafka's ``PunctuationSchedule`` does; a ``WALL_CLOCK_TIME``
schedule is checked at the end of every batch. The next times and the stream time are kept in
the node's schedule store, so schedules continue across batches and restarts.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from deltastreams.conf.errors import ProcessingError

_LONG = struct.Struct(">q")
_STREAM_TIME_KEY = b"stream-time"
NO_TIME = -1
STREAM_TIME, WALL_CLOCK_TIME = "stream_time", "wall_clock_time"


@dataclass
class Schedule:
    index: int
    interval_ms: int
    kind: Any  # PunctuationType
    callback: Callable[[int], Any]
    next_ms: int
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    def advance(self, now: int) -> None:
        """Kafka's PunctuationSchedule.next: past ``now`` by whole intervals."""
        self.next_ms = self.next_ms + self.interval_ms
        if now >= self.next_ms:
            self.next_ms = now - ((now - self.next_ms) % self.interval_ms) + self.interval_ms


class Punctuations:
    """A node's schedules and the task's stream time as that node last saw it."""

    def __init__(self, node: str, store, wall_clock_ms: int | None) -> None:
        self.node = node
        self.store = store
        self.schedules: list[Schedule] = []
        self.wall_clock: int | None = wall_clock_ms
        raw = store.get(_STREAM_TIME_KEY)
        self.stream_time = NO_TIME if raw is None else _LONG.unpack(raw)[0]

    def wall_clock_ms(self) -> int:
        return self.wall_clock if self.wall_clock is not None else int(time.time() * 1000)

    def schedule(self, interval_ms: int, punctuation_type, callback: Callable[[int], Any]) -> Schedule:
        if not isinstance(interval_ms, int) or interval_ms <= 0:
            raise ProcessingError(f"{self.node}: schedule() needs a positive interval in ms, got {interval_ms!r}", node=self.node)
        index = len(self.schedules)
        raw = self.store.get(b"next-%d" % index)
        start = 0 if punctuation_type.value == STREAM_TIME else self.wall_clock_ms() + interval_ms
        entry = Schedule(index, interval_ms, punctuation_type, callback, start if raw is None else _LONG.unpack(raw)[0])
        self.schedules.append(entry)
        return entry

    def next_stream_time_due(self) -> int | None:
        """The earliest stream time at which a stream-time schedule fires (None: none can)."""
        due = [max(e.next_ms, 0) for e in self.schedules if not e.cancelled and e.kind.value == STREAM_TIME]
        return min(due) if due else None

    def fire(self, kind: str, now: int) -> Iterator[Any]:
        """Run the schedules of ``kind`` due at ``now``, yielding what each callback returns."""
        for entry in self.schedules:
            if entry.cancelled or entry.kind.value != kind or now < entry.next_ms or now < 0:
                continue
            try:
                result = entry.callback(now)
            except Exception as e:  # noqa: BLE001 - the batch fails, as in Kafka: nothing of it is committed
                raise ProcessingError(f"{self.node}: a punctuation raised {type(e).__name__}: {e}", node=self.node) from e
            entry.advance(now)
            yield result

    def save(self) -> None:
        """Into the schedule store, committed with the batch."""
        self.store.put(_STREAM_TIME_KEY, _LONG.pack(self.stream_time))
        for entry in self.schedules:
            self.store.put(b"next-%d" % entry.index, _LONG.pack(entry.next_ms))


def row_stream_times(flow, context, prior: int) -> np.ndarray:
    """The task's stream time after each row of ``flow`` (which is in ``_seq`` order), starting
    from ``prior``, the stream time the node saw before this batch."""
    if not len(flow) or context.stream_times is None:
        return np.full(len(flow), prior, dtype=np.int64)
    task_times = context.stream_times()
    seqs = flow.seqs
    known = seqs < len(task_times)
    times = np.where(known, task_times[np.minimum(seqs, max(len(task_times) - 1, 0))] if len(task_times) else NO_TIME, NO_TIME)
    return np.maximum.accumulate(np.maximum(times.astype(np.int64), prior))
