"""Input an application was told to move past (``skip``: :mod:`deltastreams.streams.skip`), as
its transaction logs keep it.

Kafka users skip a poison record by moving their consumer group's committed offset past it.
Positions here are whole Delta versions, and one version may hold good files beside the bad one,
so a skip names a file of a version (or every file of it). It is kept as a property of the
transaction log of every sub-topology reading the topic (``metaData.configuration``, set by the
skip's own decided batch: atomic with it, and kept by every checkpoint when log retention deletes
old commits). A sub-topology takes the union of what the logs of the topic's readers hold, so a
skip interrupted between two logs behaves as the finished one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

PROPERTY = "deltastreams.skippedInput"
"""The transaction-log property holding the skips (a JSON list)."""


@dataclass(frozen=True, order=True)
class Skip:
    topic: str
    """Logical name, as the topology reads it."""
    version: int
    file: str | None
    """A file's path relative to the topic's table; None: every file the version added."""
    recorded_ms: int = 0
    reason: str = ""
    """What the skip was for, as the stopped application said it (shown by ``status``)."""

    def covers(self, topic: str, version: int, path: str) -> bool:
        return self.topic == topic and self.version == version and (self.file is None or self.file == path)

    def describe(self) -> str:
        what = f"file {self.file}" if self.file is not None else "every file"
        return f"{self.topic} version {self.version}: {what}"


def parse(text: str | None) -> list[Skip]:
    """The skips a log property holds (none if unset)."""
    return [Skip(**item) for item in json.loads(text)] if text else []


def render(skips: Iterable[Skip]) -> str:
    return json.dumps([asdict(s) for s in sorted(set(skips))])


def merged(existing: Iterable[Skip], new: Iterable[Skip]) -> list[Skip]:
    """``existing`` plus those of ``new`` not already there (the same topic, version and file):
    running a skip twice records it once."""
    kept = list(existing)
    have = {(s.topic, s.version, s.file) for s in kept}
    return kept + [s for s in new if (s.topic, s.version, s.file) not in have]


class Skips:
    """Every skip the application's logs hold, by topic."""

    def __init__(self, skips: Iterable[Skip] = ()) -> None:
        self.by_topic: dict[str, list[Skip]] = {}
        for skip in skips:
            self.by_topic.setdefault(skip.topic, []).append(skip)

    @classmethod
    def from_properties(cls, properties: Mapping[int, str | None]) -> Skips:
        """Union of the property values of several logs (by sub-topology)."""
        return cls(merged([], [s for text in properties.values() for s in parse(text)]))

    def covering(self, topic: str, version: int, path: str) -> Skip | None:
        return next((s for s in self.by_topic.get(topic, ()) if s.covers(topic, version, path)), None)

    def __bool__(self) -> bool:
        return bool(self.by_topic)
