"""An independent model of Kafka's windowed aggregation semantics, one record at a time.

Deliberately the plainest possible loop (no NumPy, no stores): the tests compare the vectorised
core against it. Records are (key, timestamp) pairs of one task, in offset order.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WindowedCountModel:
    size: int
    advance: int
    grace: int
    stream_time: int = -1
    counts: dict = field(default_factory=dict)  # (key, start) -> (count, timestamp)
    revisions: list = field(default_factory=list)  # (key, start, end, count, timestamp)
    dropped: int = 0
    emitted_final: list = field(default_factory=list)
    _final_done: set = field(default_factory=set)

    def windows_for(self, ts: int) -> list[int]:
        start = max(0, ts - self.size + self.advance) // self.advance * self.advance
        starts = []
        while start <= ts:
            starts.append(start)
            start += self.advance
        return starts

    def process(self, key, ts: int) -> None:
        self.stream_time = max(self.stream_time, ts)
        for start in self.windows_for(ts):
            end = start + self.size
            if end + self.grace <= self.stream_time:
                self.dropped += 1
                continue
            count, stamp = self.counts.get((key, start), (0, -1))
            self.counts[(key, start)] = (count + 1, max(stamp, ts))
            self.revisions.append((key, start, end, count + 1, max(stamp, ts)))

    def close_windows(self) -> None:
        """Emit-final: every window whose end + grace <= stream time, once."""
        due = sorted(
            (start + self.size, key, start)
            for (key, start) in self.counts
            if start + self.size + self.grace <= self.stream_time and (key, start) not in self._final_done
        )
        for end, key, start in due:
            self._final_done.add((key, start))
            count, stamp = self.counts[(key, start)]
            self.emitted_final.append((key, start, end, count, stamp))


def last_revision_per_window(revisions) -> dict:
    latest = {}
    for key, start, end, count, stamp in revisions:
        latest[(key, start, end)] = (count, stamp)
    return latest
