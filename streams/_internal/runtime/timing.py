"""Where a micro-batch's time goes: named phases, summed, reported with every batch."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Phases(dict):
    """Seconds per phase name."""

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - started

    def add(self, other: dict[str, float], prefix: str = "") -> None:
        for name, seconds in other.items():
            self[prefix + name] = self.get(prefix + name, 0.0) + seconds

    def describe(self) -> str:
        return ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in self.items())
