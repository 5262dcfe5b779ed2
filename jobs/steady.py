"""A steady stream of pageviews: ``rate`` events a second, appended as they happen.

Every tick (100 ms) appends the events due since the start (``rate x elapsed``) minus those
already appended, stamped with the wall-clock time of the append (ms), a share of them delayed by
up to ``max_lateness_ms``. An append that overruns its tick makes the next one larger rather than
letting the schedule drift, so the rate holds on a loaded machine; with a duration, the last
append brings the total to exactly ``rate x duration``. Used by ``python -m deltastreams.jobs.pageview generate
--rate``, the latency benchmarks and the soak test.

Where the events go is an :class:`Appender`: a Delta topic (:class:`TopicAppender`, what a Topic
given to :class:`SteadyGenerator` becomes) or whatever else a benchmark feeds (a Kafka topic, a
plain Delta table: ``deltastreams.devtools.bench.peers.inputs``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Protocol

import pyarrow as pa

from deltastreams.jobs.pageview_data import generate_events
from deltastreams.sinks import Topic

TICK_S = 0.1


@dataclass(frozen=True)
class SteadyProgress:
    """What the generator has appended so far (or in all, once it returned)."""

    rate: int
    events: int
    appends: int
    seconds: float
    """Since the schedule started (one tick before the first append)."""
    behind_events: int
    """Events due by now but not yet appended: how far the generator trails its schedule."""

    @property
    def achieved_rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "achieved_rate": round(self.achieved_rate, 1), "time": time.time()}

    def line(self) -> str:
        return (
            f"appended {self.events:,} events in {self.appends:,} appends over {self.seconds:.1f} s: "
            f"{self.achieved_rate:,.0f} events/s (target {self.rate:,}), {self.behind_events:,} behind schedule"
        )


class Appender(Protocol):
    def first_index(self) -> int:
        """How many events the destination already holds (the stream's draws continue after them)."""

    def append(self, events: pa.Table) -> None:
        """Make ``events`` (record form: key, value, timestamp) visible to readers, before returning."""


class TopicAppender:
    """Appends to a Delta topic, one commit per append, partitioned as a Kafka producer would:
    :meth:`Topic.append`, whose cost does not grow with the topic's log. (This kept a loaded
    table and committed through delta-rs, which lists the whole log around every commit: its
    appends went from 104 ms apart to 300-400 ms within a 2-hour soak, issue 42.)"""

    def __init__(self, topic: Topic) -> None:
        self.topic = topic

    def first_index(self) -> int:
        return sum(self.topic.end_offsets().values())

    def append(self, events: pa.Table) -> None:
        self.topic.append(events)


class SteadyGenerator:
    def __init__(
        self,
        topic: Topic | Appender,
        rate: int,
        *,
        duration_s: float | None = None,
        late_fraction: float = 0.0,
        max_lateness_ms: int = 30_000,
        seed: int = 0,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be a positive number of events per second, got {rate}")
        if duration_s is not None and duration_s <= 0:
            raise ValueError(f"duration must be positive (seconds), got {duration_s}")
        self.appender = TopicAppender(topic) if isinstance(topic, Topic) else topic
        self.rate, self.duration_s = rate, duration_s
        self.late_fraction, self.max_lateness_ms, self.seed = late_fraction, max_lateness_ms, seed
        self.stopping = False

    def stop(self) -> None:
        """End after the append in progress (safe from a signal handler or another thread)."""
        self.stopping = True

    def run(self, on_append: Callable[[SteadyProgress], None] | None = None) -> SteadyProgress:
        """Append until the duration is over or :meth:`stop` is called; ``on_append`` sees the
        progress after every append."""
        first_index = self.appender.first_index()  # continues the stream's draws after earlier appends
        appended = appends = 0
        started = time.monotonic()
        total = None if self.duration_s is None else round(self.rate * self.duration_s)
        while not self.stopping:
            elapsed = time.monotonic() - started
            last = total is not None and elapsed >= self.duration_s
            due = total if last else int(self.rate * elapsed)
            if due > appended:
                events = generate_events(
                    due - appended,
                    seed=self.seed,
                    late_fraction=self.late_fraction,
                    max_lateness_ms=self.max_lateness_ms,
                    first_index=first_index + appended,
                    event_time_ms=int(time.time() * 1000),
                )
                self.appender.append(events)
                appended, appends = due, appends + 1
                if on_append is not None:
                    on_append(self._progress(appended, appends, started))
            if last:
                break
            # The next tick after now: ticks an overrun append missed are not replayed one by
            # one, their events go into the next append.
            next_tick = (int((time.monotonic() - started) / TICK_S) + 1) * TICK_S
            time.sleep(max(0.0, started + next_tick - time.monotonic()))
        return self._progress(appended, appends, started)

    def _progress(self, appended: int, appends: int, started: float) -> SteadyProgress:
        seconds = time.monotonic() - started
        due = int(self.rate * seconds)
        if self.duration_s is not None:
            due = min(due, round(self.rate * self.duration_s))
        return SteadyProgress(self.rate, appended, appends, seconds, max(0, due - appended))


class StatusFile:
    """The generator's progress as a JSON file for another process (the soak test) to read,
    rewritten at most once a second, atomically (a reader never sees half a file)."""

    def __init__(self, path: str, *, every_s: float = 1.0) -> None:
        self.path, self.every_s = path, every_s
        self._written = float("-inf")

    def __call__(self, progress: SteadyProgress) -> None:
        if time.monotonic() - self._written >= self.every_s:
            self.write(progress)

    def write(self, progress: SteadyProgress, *, finished: bool = False) -> None:
        partial = f"{self.path}.partial"
        with open(partial, "w") as f:
            json.dump({**progress.to_json(), "finished": finished}, f)
        os.replace(partial, self.path)
        self._written = time.monotonic()
