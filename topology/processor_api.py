"""The record and punctuation types of the Processor API (re-exported by
:mod:`streams.processor`), here so that the processing core can use them too."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Record:
    """A record as a processor sees and forwards it."""

    key: Any
    value: Any
    timestamp: int
    headers: tuple[tuple[str, bytes], ...] = ()

    def with_key(self, key: Any) -> Record:
        return replace(self, key=key)

    def with_value(self, value: Any) -> Record:
        return replace(self, value=value)

    def with_timestamp(self, timestamp: int) -> Record:
        return replace(self, timestamp=timestamp)


class PunctuationType(Enum):
    STREAM_TIME = "stream_time"
    """Fires as the task's stream time (the largest record timestamp it has seen) passes each
    interval, checked after every record."""
    WALL_CLOCK_TIME = "wall_clock_time"
    """Fires as the machine's clock passes each interval, checked at the end of every batch."""
