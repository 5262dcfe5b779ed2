"""Offsets of records that other Delta writers appended without them.

A topic's records carry dense offsets per partition. This project's writers assign them when they
append; a Delta writer that is not this project (delta-spark, a ``write_deltalake`` of pandas or
polars) cannot know the next offsets, so it appends rows whose ``offset`` is null (or absent) and
lets the log decide: such a file's records follow the partition's end as it stood before them, in
the order the log lists them (versions in order, and within a version the order of the commit's
``add`` actions), and in the file's row order. That is a pure function of the log, so every
reader, every replay after a crash and every writer computing the next offsets agrees on it.

Computing it needs the commit files from a point where the ends are known: version 0, or a
checkpoint whose files all carry their offsets. The ends after a version are cached per table in
this process, so a reader that follows the log pays for each commit file once. A file whose
offsets cannot be assigned fails clearly (:class:`ExternalAppendError`): a null partition, some
offsets null and some not, offsets that do not continue the partition, or records without
offsets that a rewrite (an OPTIMIZE, ``dataChange = false``) moved into another file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import replace
from urllib.parse import unquote

import pyarrow.parquet as pq

from deltastreams.conf.errors import ExternalAppendError, LogRetentionError
from deltastreams.sinks._internal.files import PARTITION, DataFile, filesystem_for


def added_file(add: dict, uri: str, version: int | None) -> DataFile:
    """The file an ``add`` action names, as its stats describe it (offsets -1 when the writer
    wrote none). A null partition is refused: the file's records belong to no partition."""
    raw = add.get("partitionValues", {}).get(PARTITION)
    if raw is None:
        raise ExternalAppendError(
            f"{uri}: file {add['path']} (version {version}) has a null partition; a writer other than deltastreams must "
            "set 'partition' on every row (Kafka's default partitioner: deltastreams.streams.spark.kafka_partition in Spark)",
            uri=uri,
            path=add["path"],
        )
    stats = json.loads(add.get("stats") or "{}")
    records = int(stats.get("numRecords", -1))
    low = stats.get("minValues", {}).get("offset")
    high = stats.get("maxValues", {}).get("offset")
    nulls = stats.get("nullCount", {}).get("offset")
    if low is not None and nulls:
        raise ExternalAppendError(
            f"{uri}: file {add['path']} (version {version}) has {nulls} rows without an offset among rows with one; a writer "
            "must leave 'offset' null (or out) on every row it appends, or set it on every row",
            uri=uri,
            path=add["path"],
        )
    return DataFile(
        path=unquote(add["path"]),
        partition=int(raw),
        num_records=records,
        min_offset=int(low) if low is not None else -1,
        max_offset=int(high) if high is not None else -1,
        size=int(add.get("size", -1)),
    )


def unassigned(f: DataFile) -> bool:
    """Written without offsets: the log assigns them."""
    return f.min_offset < 0


def assign(uri: str, version: int, files: Iterable[DataFile], ends: dict[int, int]) -> list[DataFile]:
    """The records ``files`` (one version's data-changing adds, in commit order) add, with
    offsets: those without get the next ones of their partition; ``ends`` moves past them."""
    placed = []
    for f in files:
        end = ends.get(f.partition, 0)
        if unassigned(f):
            count = f.num_records if f.num_records >= 0 else _row_count(uri, f.path)
            f = replace(f, num_records=count, min_offset=end, max_offset=end + count - 1)
        elif f.min_offset != end:
            raise ExternalAppendError(
                f"{uri}: file {f.path} (version {version}) holds offsets {f.min_offset}..{f.max_offset} of partition "
                f"{f.partition}, whose records end at {end}; offsets must continue the partition: leave them null and the "
                "log assigns them",
                uri=uri,
                path=f.path,
            )
        if f.num_records > 0:
            ends[f.partition] = f.max_offset + 1
        placed.append(f)
    return placed


def _row_count(uri: str, path: str) -> int:
    """Rows of a file whose add action has no stats (a writer with stats turned off)."""
    fs, base = filesystem_for(uri)
    with fs.open_input_file(f"{base}/{path}") as source:
        return pq.ParquetFile(source).metadata.num_rows


class OffsetLog:
    """Follows one table's commits from a point where its ends are known, remembering the ends at
    the versions it was asked about (per process: see :data:`_LOGS`), so a reader following the
    log and a writer asking for the head, interleaved, each walk only what is new to them."""

    _KEEP = 64

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.points: dict[int, dict[int, int]] = {}
        self.lock = threading.Lock()

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
                adds = [added_file(a["add"], self.uri, at) for a in actions if "add" in a and a["add"].get("dataChange", True)]
                assign(self.uri, at, adds, ends)
            self.points[version] = dict(ends)
            for old in sorted(self.points)[: -self._KEEP]:
                del self.points[old]
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
