"""The application's input topics as the driver sees them: their latest versions, watched in the
background, and the files each version added, read once and cut into bounded batches.

The watcher polls every input topic's Delta log (:func:`deltastreams.sinks.latest_version`: one probe for the
next commit file when nothing changed, whatever the table's size) and asks for a trigger whenever some sub-topology has input it has not consumed.
A trigger takes whole versions, as many as fit in ``max_records_per_batch`` records per topic (at
least one), so a backlog is consumed in bounded batches; if input is left, the trigger asks for
the next one at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping


from deltastreams.conf.errors import LogRetentionError
from deltastreams.sinks import DataFile, files_added, latest_version, open_table
from deltastreams.streams._internal.runtime.kafka_sources import KafkaSources

log = logging.getLogger("deltastreams")


class InputLog:
    """Files added by each version of the input topics, read once from their Delta logs."""

    def __init__(self, uris: Mapping[str, str], max_records: int) -> None:
        self.uris = dict(uris)
        self.max_records = max_records
        self._files: dict[tuple[str, int], list[DataFile]] = {}

    def files(self, topic: str, version: int) -> list[DataFile]:
        key = (topic, version)
        if key not in self._files:
            try:
                self._files[key] = files_added(self.uris[topic], version - 1, version)
            except LogRetentionError as e:
                raise behind_retention(topic, version - 1, e) from None
        return self._files[key]

    def require_positions(self, consumed: Callable[[str], int], latest: Mapping[str, int]) -> None:
        """Read the version after every input topic's position, if there is one (the first
        batch reads it anyway: it stays cached): a log cleaned past the position fails here, at
        start (:func:`behind_retention`)."""
        for topic in self.uris:
            position = consumed(topic)
            if latest.get(topic, position) > position:
                self.files(topic, position + 1)

    def bounded(self, topic: str, start: int, latest: int) -> tuple[int, list[DataFile]]:
        """The end version of the next batch after ``start`` (at most ``latest``) and its files."""
        end, taken, files = start, 0, []
        while end < latest:
            added = self.files(topic, end + 1)
            count = sum(max(f.num_records, 0) for f in added)
            if taken and taken + count > self.max_records:
                break
            end, taken = end + 1, taken + count
            files += added
        return end, files

    def forget(self, topic: str, up_to: int) -> None:
        for key in [k for k in self._files if k[0] == topic and k[1] <= up_to]:
            del self._files[key]


def behind_retention(topic: str, position: int, error: LogRetentionError) -> LogRetentionError:
    """The application's own words for an input topic whose log was cleaned past its position (a
    Kafka consumer's offset out of range, with auto.offset.reset=none): it stops rather than skip
    records, and says how to go on."""
    oldest = f"version {error.oldest}" if error.oldest is not None else "a later version"
    restart = f"--to-version {topic}={error.oldest - 1}" if error.oldest is not None else "--to-version <the version before the oldest kept>"
    return LogRetentionError(
        f"input topic '{topic}': this application consumed it up to version {position}, but the topic's log now starts at {oldest}: "
        "its writer deleted the commit files older than the topic's delta.logRetentionDuration, so the records appended in between "
        "can no longer be read in order (they are still in the table). The application stops rather than skip them. To go on, "
        f"reset it (python -m deltastreams.jobs.reset ... {restart}: reprocesses from there with empty state; docs/operations.md), "
        "and give the topic a longer delta.logRetentionDuration than the application may stay stopped (docs/retention.md)",
        uri=error.uri,
        version=error.version,
        oldest=error.oldest,
    )


class InputWatcher(threading.Thread):
    """Polls the input topics' latest versions; calls ``on_input`` while some is unconsumed, or
    while ``due()`` says a task needs a batch without input (idle close)."""

    def __init__(
        self,
        uris: Mapping[str, str],
        consumed: Callable[[str], int],
        on_input: Callable[[], None],
        interval_s: float,
        *,
        due: Callable[[], bool] | None = None,
        kafka: KafkaSources | None = None,
    ) -> None:
        super().__init__(name="deltastreams-input-watcher", daemon=True)
        self.uris = dict(uris)
        self.consumed = consumed
        self.on_input = on_input
        self.interval_s = interval_s
        self.due = due
        self.kafka = kafka
        self._latest: dict = {t: open_table(uri).version() for t, uri in self.uris.items()}
        if kafka is not None:
            self._latest.update({t: kafka.latest(t) for t in kafka.topics})
        self._kafka_polled = time.monotonic()
        self._stopping = threading.Event()
        self._refreshing = threading.Lock()

    def latest(self) -> dict:
        """Per input topic, its latest version (a Kafka topic: the end offset per partition)."""
        return dict(self._latest)

    def pending(self) -> bool:
        for topic, latest in self._latest.items():
            consumed = self.consumed(topic)
            if self.kafka.has_new(topic, latest, consumed) if isinstance(latest, dict) else latest > consumed:
                return True
        return False

    def run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - a transient read error: try again next round
                log.debug("watching the input topics failed", exc_info=True)
                continue
            if self.pending() or (self.due is not None and self.due()):
                self.on_input()

    def refresh(self) -> None:
        """Look at the input topics now (the poll does it every ``interval_s``; a trigger that
        just ended does it too, rather than wait up to a poll interval to hear of new input)."""
        with self._refreshing:  # the poll's and a trigger's look must not overwrite a newer version with an older one
            for topic, uri in self.uris.items():
                self._latest[topic] = latest_version(uri, self._latest[topic])
            if self.kafka is not None and time.monotonic() - self._kafka_polled >= self.kafka.config.poll_interval_ms / 1000:
                self._kafka_polled = time.monotonic()
                for topic in self.kafka.topics:
                    self._latest[topic] = self.kafka.latest(topic)

    def stop(self) -> None:
        self._stopping.set()
