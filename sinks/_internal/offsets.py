"""Offsets of records that other Delta writers appended without them, and the files that break
the contract for such writers.

A topic's records carry dense offsets per partition. This project's writers assign them when they
append; a Delta writer that is not this project (delta-spark, a ``write_deltalake`` of pandas or
polars) cannot know the next offsets, so it appends rows whose ``offset`` is null (or absent) and
lets the log decide: such a file's records follow the partition's end as it stood before them, in
the order the log lists them (versions in order, and within a version the order of the commit's
``add`` actions), and in the file's row order. That is a pure function of the log, so every
reader, every replay after a crash and every writer computing the next offsets agrees on it.

A file that breaks the contract is *rejected* (:class:`RejectedFile`): a null partition, some
offsets null and some not, offsets that start before the partition's end (taken already: a
writer counting on its own, or a rewrite of records in the log), or, without stats, a file whose
rows cannot be counted. A rejected file holds no offsets: the files after it are placed as if it
were not there, which keeps the assignment a pure function of the log whatever a reader then does
with the rejected file (an application dead-letters it, skips it, or stops; a plain read fails
naming it). Offsets that start after the partition's end leave a gap, which is accepted: Kafka's
offsets have gaps too (transaction markers, compaction), so no reader may count on density.

Computing it needs the commit files from a point where the ends are known: version 0, or a
checkpoint whose files all carry their offsets. The ends after a version are cached per table in
this process, so a reader that follows the log pays for each commit file once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from deltastreams.conf.errors import ExternalAppendError, LogRetentionError
from deltastreams.sinks._internal.files import PARTITION, DataFile, filesystem_for


@dataclass(frozen=True)
class RejectedFile:
    """A file another writer added that breaks the contract; it holds no offsets."""

    path: str
    partition: int | None
    """None: the writer left the partition null."""
    version: int | None
    """The version that added it (None: found in a snapshot)."""
    reason: str
    num_records: int = -1
    """From its stats (-1: unknown)."""

    def error(self, uri: str) -> ExternalAppendError:
        return ExternalAppendError(
            f"{uri}: file {self.path} (version {self.version}) {self.reason}", uri=uri, path=self.path, version=self.version, reason=self.reason
        )


def judge(add: dict, uri: str, version: int | None) -> DataFile | RejectedFile:
    """The file an ``add`` action names, as its stats describe it (offsets -1 when the writer
    wrote none), or why it is rejected: a null partition (its records belong to no partition),
    some offsets null and some not."""
    raw = add.get("partitionValues", {}).get(PARTITION)
    stats = json.loads(add.get("stats") or "{}")
    records = int(stats.get("numRecords", -1))
    path = unquote(add["path"])
    if raw is None:
        return RejectedFile(
            path, None, version,
            "has a null partition; a writer other than deltastreams must set 'partition' on every row (Kafka's default "
            "partitioner: deltastreams.streams.spark.kafka_partition in Spark)",
            records,
        )  # fmt: skip
    low = stats.get("minValues", {}).get("offset")
    high = stats.get("maxValues", {}).get("offset")
    nulls = stats.get("nullCount", {}).get("offset")
    if low is not None and nulls:
        return RejectedFile(
            path, int(raw), version,
            f"has {nulls} rows without an offset among rows with one; a writer must leave 'offset' null on every row it "
            "appends, or set it on every row",
            records,
        )  # fmt: skip
    return DataFile(
        path=path,
        partition=int(raw),
        num_records=records,
        min_offset=int(low) if low is not None else -1,
        max_offset=int(high) if high is not None else -1,
        size=int(add.get("size", -1)),
    )


def added_file(add: dict, uri: str, version: int | None) -> DataFile:
    """:func:`judge` for readers that take no rejected file: it fails, naming the file."""
    judged = judge(add, uri, version)
    if isinstance(judged, RejectedFile):
        raise judged.error(uri)
    return judged


def unassigned(f: DataFile) -> bool:
    """Written without offsets: the log assigns them."""
    return f.min_offset < 0


@dataclass
class Placed:
    """One version's data-changing adds, judged: the files with their offsets, the rejected."""

    files: list[DataFile]
    rejected: list[RejectedFile]


def assign(uri: str, version: int, judged: Iterable[DataFile | RejectedFile], ends: dict[int, int]) -> Placed:
    """The records ``judged`` (one version's data-changing adds, in commit order) add, with
    offsets: those without get the next ones of their partition; ``ends`` moves past them.
    Offsets that start before the partition's end are rejected (taken already)."""
    placed = Placed([], [])
    for f in judged:
        if isinstance(f, RejectedFile):
            placed.rejected.append(f)
            continue
        end = ends.get(f.partition, 0)
        if unassigned(f):
            count = f.num_records if f.num_records >= 0 else _row_count(uri, f.path)
            if count is None:
                placed.rejected.append(RejectedFile(f.path, f.partition, version, "cannot be read (its rows cannot be counted: no stats, no Parquet footer)"))
                continue
            f = replace(f, num_records=count, min_offset=end, max_offset=end + count - 1)
        elif f.min_offset < end:
            placed.rejected.append(
                RejectedFile(
                    f.path, f.partition, version,
                    f"holds offsets {f.min_offset}..{f.max_offset} of partition {f.partition}, whose records end at {end}: those "
                    "offsets are taken (a writer counting on its own, or a rewrite such as a DELETE or UPDATE of records in the "
                    "log); leave 'offset' null and the log assigns it",
                    f.num_records,
                )  # fmt: skip
            )
            continue
        if f.num_records > 0:
            ends[f.partition] = max(end, f.max_offset + 1)
        placed.files.append(f)
    return placed


def _row_count(uri: str, path: str) -> int | None:
    """Rows of a file whose add action has no stats (a writer with stats turned off); None if
    the file is gone or not Parquet (a transient error of the store raises)."""
    fs, base = filesystem_for(uri)
    try:
        with fs.open_input_file(f"{base}/{path}") as source:
            return pq.ParquetFile(source).metadata.num_rows
    except (FileNotFoundError, pa.ArrowInvalid):
        return None


class OffsetLog:
    """Follows one table's commits from a point where its ends are known, remembering the ends at
    the versions it was asked about (per process: see :data:`_LOGS`), so a reader following the
    log and a writer asking for the head, interleaved, each walk only what is new to them."""

    _KEEP = 64

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.points: dict[int, dict[int, int]] = {}
        self.lock = threading.Lock()

    def remember(self, version: int, ends: dict[int, int]) -> None:
        """The ends after ``version``, found another way (a snapshot whose files all carry
        offsets, a reader that judged that version's files)."""
        with self.lock:
            self._keep(version, ends)

    def _keep(self, version: int, ends: dict[int, int]) -> None:
        self.points[version] = dict(ends)
        for old in sorted(self.points)[: -self._KEEP]:
            del self.points[old]

    def known(self, version: int) -> dict[int, int] | None:
        with self.lock:
            ends = self.points.get(version)
            return dict(ends) if ends is not None else None

    def ends_after(self, version: int, read_commit, start) -> dict[int, int]:
        """Next offset per partition after ``version`` (partitions with records)."""
        with self.lock:
            known = max((v for v in self.points if v <= version), default=None)
            fresh = known is None
            at, ends = (known, dict(self.points[known])) if not fresh else start(version)
            while at < version:
                actions = read_commit(self.uri, at + 1)
                if actions is None:  # cleaned up since: start again from what the log still has
                    if fresh:
                        raise missing_history(self.uri, at + 1)
                    (at, ends), fresh = start(version), True
                    continue
                at += 1
                assign(self.uri, at, [judge(a["add"], self.uri, at) for a in actions if "add" in a and a["add"].get("dataChange", True)], ends)
            self._keep(version, ends)
            return ends


_LOGS: dict[str, OffsetLog] = {}
_LOGS_LOCK = threading.Lock()


def offset_log(uri: str) -> OffsetLog:
    with _LOGS_LOCK:
        if uri not in _LOGS:
            _LOGS[uri] = OffsetLog(uri)
        return _LOGS[uri]


def missing_history(uri: str, version: int) -> LogRetentionError:
    return LogRetentionError(
        f"{uri} holds records appended without offsets, and the commit files that order them before version {version} are gone "
        "(log retention) with no checkpoint whose files all carry offsets: their offsets cannot be assigned. Keep the log of a "
        "topic other writers append to (delta.logRetentionDuration), or copy its records into a new topic",
        uri=uri,
        version=version,
    )
