"""The application's input topics as the driver sees them: their latest versions, watched in the
background, and the files each version added, read once and cut into bounded batches.

The watcher polls every input topic's Delta log (:func:`deltastreams.sinks.latest_version`: one probe for the
next commit file when nothing changed, whatever the table's size) and asks for a trigger whenever some sub-topology has input it has not consumed.
A trigger takes whole versions, as many as fit in ``max_records_per_batch`` records per topic (at
least one), so a backlog is consumed in bounded batches; if input is left, the trigger asks for
the next one at once.

Each version is judged as it is read (:func:`deltastreams.sinks.read_version`): files that break the
contract for external writers come apart (the tasks dead-letter them, or, with ``on_bad_record =
"fail"``, the batch ends before that version and the next one stops naming the file); files the
application was told to skip are left out; a schema change that drops or retypes a column the
topology reads stops the application, naming the column (:mod:`deltastreams.streams._internal.runtime.input_schema`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from deltastreams.conf.errors import LogRetentionError, SchemaMismatchError
from deltastreams.sinks import DataFile, RejectedFile, TopicLayout, VersionRead, latest_version, open_table, read_version
from deltastreams.streams._internal.runtime.input_schema import AddedColumns, check_schema, columns_of
from deltastreams.streams._internal.runtime.kafka_sources import KafkaSources
from deltastreams.streams._internal.runtime.skips import Skips

log = logging.getLogger("deltastreams")


@dataclass
class InputRange:
    """The versions ``(start, end]`` of one input topic a batch takes, and what they added."""

    end: int
    files: list[DataFile] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    """The version that added each of ``files``."""
    rejected: list[RejectedFile] = field(default_factory=list)
    checked: bool = False
    """Read as the contract for external writers says (an input topic): see ``InputFiles.checked``."""


class InputLog:
    """Files added by each version of the input topics, read once from their Delta logs."""

    def __init__(
        self,
        uris: Mapping[str, str],
        max_records: int,
        *,
        layouts: Mapping[str, TopicLayout] | None = None,
        skips: Skips | None = None,
        stop: Callable[[str, RejectedFile], Exception] | None = None,
        added_columns: AddedColumns | None = None,
    ) -> None:
        self.uris = dict(uris)
        self.max_records = max_records
        self.layouts = dict(layouts or {})
        """Per topic, the layout the topology reads (a schema change is judged against it)."""
        self.skips = skips or Skips()
        self.stop = stop
        """With ``on_bad_record = "fail"``: the error that stops the application at a rejected file."""
        self._reads: dict[tuple[str, int], VersionRead] = {}
        self._added_columns = added_columns or AddedColumns()
        """Columns beyond the layout already named (at start, or by an earlier version)."""
        self._skipped_said: set[tuple[str, int, str]] = set()

    def read(self, topic: str, version: int) -> VersionRead:
        """What ``version`` of ``topic`` added, judged, without the files skipped."""
        key = (topic, version)
        if key not in self._reads:
            try:
                read = read_version(self.uris[topic], version)
            except LogRetentionError as e:
                raise behind_retention(topic, version - 1, e) from None
            self._reads[key] = self._without_skipped(topic, read)
        return self._reads[key]

    def _schema_problem(self, topic: str, read: VersionRead) -> Exception | None:
        """Why the application cannot take ``read``'s version: its schema drops or retypes a
        column the topology reads (a column it adds is only named, once)."""
        if read.schema is None or topic not in self.layouts:
            return None
        where = f"version {read.version} changed its schema:"
        try:
            self._added_columns.note(topic, check_schema(topic, self.layouts[topic], columns_of(read.schema), where), where)
        except SchemaMismatchError as e:
            return e
        return None

    def _without_skipped(self, topic: str, read: VersionRead) -> VersionRead:
        if not self.skips:
            return read
        files = [f for f in read.files if not self._skipped(topic, read.version, f.path)]
        rejected = [r for r in read.rejected if not self._skipped(topic, read.version, r.path)]
        return VersionRead(read.version, files, rejected, read.schema, read.removed)

    def _skipped(self, topic: str, version: int, path: str) -> bool:
        skip = self.skips.covering(topic, version, path)
        if skip is not None and (topic, version, path) not in self._skipped_said:
            self._skipped_said.add((topic, version, path))
            log.info("input %s version %d: skipping file %s, as recorded by skip (%s)", topic, version, path, skip.reason or "no reason given")
        return skip is not None

    def files(self, topic: str, version: int) -> list[DataFile]:
        return self.read(topic, version).files

    def require_positions(self, consumed: Callable[[str], int], latest: Mapping[str, int]) -> None:
        """Read the version after every input topic's position, if there is one (the first
        batch reads it anyway: it stays cached): a log cleaned past the position fails here, at
        start (:func:`behind_retention`)."""
        for topic in self.uris:
            position = consumed(topic)
            if latest.get(topic, position) > position:
                self.read(topic, position + 1)

    def bounded(self, topic: str, start: int, latest: int) -> InputRange:
        """The end version of the next batch after ``start`` (at most ``latest``) and what it adds.
        A version whose schema the topology cannot read, or, under ``stop``, with a rejected file,
        ends the batch before it, or, first in the batch, stops the application."""
        taken = InputRange(start, checked=True)
        count = 0
        withdrawn = self._withdrawn(topic, start, latest)
        while taken.end < latest:
            read = self._unwithdrawn(topic, self.read(topic, taken.end + 1), withdrawn)
            problem = self._schema_problem(topic, read)
            if problem is None and read.rejected and self.stop is not None:
                problem = self.stop(topic, read.rejected[0])
            if problem is not None:  # the versions before it first, then stop there
                if taken.end == start:
                    raise problem
                break
            records = sum(max(f.num_records, 0) for f in read.files) + sum(max(r.num_records, 0) for r in read.rejected)
            if count and count + records > self.max_records:
                break
            taken.end, count = taken.end + 1, count + records
            taken.files += read.files
            taken.versions += [read.version] * len(read.files)
            taken.rejected += read.rejected
        return taken

    def _withdrawn(self, topic: str, start: int, latest: int) -> dict[str, int]:
        """Files removed with their records (a DELETE) in ``(start, latest]``: path -> the version
        that removed it. One read per version, cached: the batches after this one read them anyway."""
        removed: dict[str, int] = {}
        for version in range(start + 1, latest + 1):
            for path in self.read(topic, version).removed:
                removed.setdefault(path, version)
        return removed

    def _unwithdrawn(self, topic: str, read: VersionRead, withdrawn: dict[str, int]) -> VersionRead:
        """``read`` without the files a later version removed before the application got to them:
        removing an append's file is how a Delta user withdraws it (the way out of bad input that
        needs no command), and a reader of the table as it is now would not see them either."""
        gone = {f: v for f in (*(x.path for x in read.files), *(r.path for r in read.rejected)) if (v := withdrawn.get(f, -1)) > read.version}
        if not gone:
            return read
        for path, by in gone.items():
            log.info("input %s version %d: file %s was removed by version %d before the application read it: not read", topic, read.version, path, by)
        files = [f for f in read.files if f.path not in gone]
        rejected = [r for r in read.rejected if r.path not in gone]
        return VersionRead(read.version, files, rejected, read.schema, read.removed)

    def forget(self, topic: str, up_to: int) -> None:
        for key in [k for k in self._reads if k[0] == topic and k[1] <= up_to]:
            del self._reads[key]


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
