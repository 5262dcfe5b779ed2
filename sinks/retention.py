"""Retention of Delta topics while the application runs: each function is one step that keeps
storage bounded (docs/retention.md), called by the application's driver between batches, under
the topic's lock, with the ``DeltaTable`` the application last saw.

What every step keeps true:
- Offsets never change, and the newest file of every partition is never removed or rewritten:
  a partition's end offset (max offset + 1 over the snapshot) survives, and so does the
  runtime's note of the last changelog file it committed per partition.
- A step that commits does so exclusively, against ``table.version()``, with delta-rs' retries
  off. If anything else committed since, nothing changes: the result says ``conflict``, the
  files the step wrote are deleted, and the caller tries again next cycle.
- Rewritten files (compaction, optimize) are added with ``dataChange = false``, so incremental
  readers (:func:`deltastreams.sinks._internal.delta_log.files_added`) never read their records again.
- No step deletes a file the log references. Removed files stay on disk for ``removed_delay``
  (readers of older versions, slow or zombie, may still read them) and files of decided batches
  stay until published; only :func:`delete_unreferenced` deletes data files, and
  :func:`clean_log` deletes only commit files no reader still needs.

``on_step`` is called with one of :data:`KILL_POINTS` between a step's stages (after writing
files, after a commit, between deletions), so a test harness can kill the process there.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import Enum

import pyarrow as pa
from deltalake import DeltaTable

from deltastreams.conf.errors import RetentionError
from deltastreams.sinks._internal.compaction import compact_rows
from deltastreams.sinks._internal.delta_log import files_added, snapshot_files, table_location
from deltastreams.sinks._internal.exclusive import by_partition, commit_actions, remove_actions, rewrite_actions, set_properties
from deltastreams.sinks._internal.files import PARTITION, DataFile, data_files, delete_file, read_rows, write_merged_file, write_partition_file
from deltastreams.sinks._internal.log_commit import checkpoint_interval, delete_info, optimize_info
from deltastreams.sinks._internal.log_expiry import REMOVED_FILE_RETENTION_PROPERTY, interval_text
from deltastreams.sinks._internal.log_files import delete_files, list_log, removed_files
from deltastreams.sinks._internal.small_files import runs_to_merge
from deltastreams.sinks.topics import TopicLayout
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog

log = logging.getLogger(__name__)

WATERMARKS_PROPERTY = "deltastreams.cleanWatermarks"
"""Table property of a changelog: per partition, the offset below which compaction may have
dropped tombstones (JSON object, partition -> offset)."""
TOMBSTONE_RETENTION_PROPERTY = REMOVED_FILE_RETENTION_PROPERTY

PURGE_AFTER_COMMIT = "retention_purge_after_commit"
EXPIRE_AFTER_COMMIT = "retention_expire_after_commit"
COMPACT_AFTER_WRITE = "retention_compact_after_write"
COMPACT_AFTER_WATERMARK = "retention_compact_after_watermark"
COMPACT_AFTER_COMMIT = "retention_compact_after_commit"
OPTIMIZE_AFTER_WRITE = "retention_optimize_after_write"
OPTIMIZE_AFTER_COMMIT = "retention_optimize_after_commit"
FILES_AFTER_COMMIT = "retention_files_after_commit"
FILES_DURING_DELETE = "retention_files_during_delete"
FILES_AFTER_DELETE = "retention_files_after_delete"
LOG_AFTER_CHECKPOINT = "retention_log_after_checkpoint"
LOG_DURING_DELETE = "retention_log_during_delete"
LOG_AFTER_DELETE = "retention_log_after_delete"
KILL_POINTS = (
    PURGE_AFTER_COMMIT,
    EXPIRE_AFTER_COMMIT,
    COMPACT_AFTER_WRITE,
    COMPACT_AFTER_WATERMARK,
    COMPACT_AFTER_COMMIT,
    OPTIMIZE_AFTER_WRITE,
    OPTIMIZE_AFTER_COMMIT,
    FILES_AFTER_COMMIT,
    FILES_DURING_DELETE,
    FILES_AFTER_DELETE,
    LOG_AFTER_CHECKPOINT,
    LOG_DURING_DELETE,
    LOG_AFTER_DELETE,
)
"""Every point ``on_step`` is called at."""

OnStep = Callable[[str], None] | None


class Step(Enum):
    PURGE = "purge"
    EXPIRE = "expire"
    COMPACT = "compact"
    OPTIMIZE = "optimize"
    DELETE_FILES = "delete_files"
    CLEAN_LOG = "clean_log"


@dataclass(frozen=True)
class RetentionResult:
    """What one step did to one table."""

    step: Step
    uri: str
    version: int | None = None
    """The table's version after the step's own commits (the caller records it as the version
    it last wrote); None if the step committed nothing."""
    conflict: bool = False
    """Another writer committed since the version the step started from: it changed nothing
    (beyond ``version``, if set) and should be tried again next cycle."""
    files_removed: int = 0
    """Files removed from the table (remove actions committed)."""
    files_added: int = 0
    records_before: int = 0
    """Records in the files removed or rewritten."""
    records_after: int = 0
    """Records in the files added in their place."""
    bytes_before: int = 0
    bytes_after: int = 0
    files_deleted: int = 0
    """Files deleted from storage (data files, or commit files and checkpoints of the log)."""
    orphans_deleted: int = 0
    """Of ``files_deleted``, data files no commit ever referenced."""
    bytes_deleted: int = 0
    """Data files only."""
    watermarks: Mapping[int, int] = field(default_factory=dict)
    """``compact``: every partition's clean watermark after the step."""

    def describe(self) -> str:
        parts = [f"{self.step.value} {self.uri}"]
        if self.conflict:
            parts.append("skipped: another writer committed")
        if self.version is not None:
            parts.append(f"version {self.version}")
        if self.files_removed or self.files_added:
            parts.append(
                f"files -{self.files_removed} +{self.files_added}, records {self.records_before:,} -> {self.records_after:,}, "
                f"bytes {self.bytes_before:,} -> {self.bytes_after:,}"
            )
        if self.files_deleted and self.step is Step.DELETE_FILES:
            parts.append(f"deleted {self.files_deleted} files ({self.orphans_deleted} orphans, {self.bytes_deleted:,} bytes)")
        elif self.files_deleted:
            parts.append(f"deleted {self.files_deleted} log files")
        if self.watermarks:
            parts.append(f"clean watermarks {dict(self.watermarks)}")
        return ", ".join(parts)


# -- consumed repartition records (Kafka's deleteRecords) ----------------------------------------


def consumed_offsets(table: DeltaTable, consumed_version: int) -> dict[int, int]:
    """Per partition with files, the first offset not consumed by a reader that has consumed
    every version up to ``consumed_version`` (a downstream sub-topology's committed source
    position). Reads the commit files after ``consumed_version``, which log retention keeps."""
    if consumed_version < 0:
        return {}
    files = by_partition(snapshot_files(table))
    unread: dict[int, int] = {}
    for f in files_added(table_location(table), consumed_version, table.version()):
        unread[f.partition] = min(unread.get(f.partition, f.min_offset), f.min_offset)
    return {p: unread.get(p, mine[-1].max_offset + 1) for p, mine in files.items()}


def purge_consumed(table: DeltaTable, consumed: Mapping[int, int], *, on_step: OnStep = None, now_ms: int | None = None) -> RetentionResult:
    """Remove every file whose records all lie below ``consumed[partition]`` (the first offset
    not yet consumed downstream), except the newest file of each partition, which carries the
    partition's end offset. Partitions not in ``consumed`` are left alone."""
    uri = table_location(table)
    files = by_partition(snapshot_files(table))
    doomed: list[DataFile] = []
    for partition, offset in consumed.items():
        mine = files.get(partition, [])
        end = mine[-1].max_offset + 1 if mine else 0
        if not 0 <= offset <= end:
            raise RetentionError(
                f"cannot purge partition {partition} of {uri} below offset {offset}: its records are [0, {end}); "
                "pass the first offset the downstream has not consumed",
                uri=uri,
            )
        doomed += [f for f in mine[:-1] if f.max_offset < offset]
    return _remove(table, Step.PURGE, doomed, PURGE_AFTER_COMMIT, on_step, now_ms)


# -- time and size retention of sink topics (Kafka's retention.ms, retention.bytes) ---------------


def expire_oldest(
    table: DeltaTable,
    *,
    retention: timedelta | None,
    retention_bytes: int | None,
    consumed: Mapping[int, int] | None = None,
    on_step: OnStep = None,
    now_ms: int | None = None,
) -> RetentionResult:
    """Remove the oldest files of each partition: those whose records are all older than
    ``retention`` (largest record timestamp against the wall clock), and then, while the
    partition would still hold at least ``retention_bytes`` without it, the oldest file. The
    newest file of each partition always stays. ``consumed`` (first offset not yet consumed, per
    partition) protects records a reader inside the application has not read yet.

    The removes are data changes (Delta's protocol allows no other kind of remove without an
    add): a Delta streaming reader outside deltastreams needs ``ignoreDeletes`` or
    ``skipChangeCommits`` on a topic with time or size retention."""
    now = _now(now_ms)
    doomed: list[DataFile] = []
    for partition, mine in by_partition(snapshot_files(table)).items():
        remaining = sum(f.size for f in mine)
        for f in mine[:-1]:
            if consumed is not None and f.max_offset >= consumed.get(partition, 0):
                break
            too_old = retention is not None and 0 <= f.max_timestamp < now - _ms(retention)
            too_big = retention_bytes is not None and remaining - f.size >= retention_bytes
            if not (too_old or too_big):
                break
            doomed.append(f)
            remaining -= f.size
    return _remove(table, Step.EXPIRE, doomed, EXPIRE_AFTER_COMMIT, on_step, now_ms)


def _remove(table: DeltaTable, step: Step, doomed: list[DataFile], point: str, on_step: OnStep, now_ms: int | None) -> RetentionResult:
    uri = table_location(table)
    if not doomed:
        return RetentionResult(step, uri)
    actions = remove_actions(doomed, data_change=True, now_ms=_now(now_ms))
    # As delta-spark's DELETE of the records below each partition's new start records it.
    ends = {}
    for f in doomed:
        ends[f.partition] = max(ends.get(f.partition, 0), f.max_offset + 1)
    parameters, metrics = delete_info([f"(partition = {p}) AND (offset < {o})" for p, o in sorted(ends.items())], doomed)
    version = commit_actions(table, actions, {"kind": step.value, "files": len(doomed)}, operation="DELETE", parameters=parameters, metrics=metrics)
    if version is None:
        return RetentionResult(step, uri, conflict=True)
    _step(on_step, point)
    return RetentionResult(
        step,
        uri,
        version=version,
        files_removed=len(doomed),
        records_before=sum(f.num_records for f in doomed),
        bytes_before=sum(f.size for f in doomed),
    )


# -- changelog compaction (Kafka's cleanup.policy=compact) -----------------------------------------


def changelog_watermarks(table: DeltaTable) -> dict[int, int]:
    """Per partition, the clean watermark: compaction may have dropped tombstones below this
    offset, so a store whose applied offset is below it must be rebuilt from offset 0 (it may
    hold keys whose deletes are gone). Partitions never cleaned of tombstones are absent (0).
    Read from the table's properties: no log scan, survives checkpoints and log cleanup."""
    raw = table.metadata().configuration.get(WATERMARKS_PROPERTY)
    return {int(p): int(o) for p, o in json.loads(raw).items()} if raw else {}


@dataclass(frozen=True)
class PreparedRewrite:
    """A compaction or optimize whose new files are written, not yet committed: made from a
    snapshot of the table (outside the application's commit lock: reading and writing thousands
    of small files takes seconds), committed by :func:`commit_rewrite` against the table's latest
    version. Between the two, the application only appends; the files a rewrite replaces are
    removed by retention steps alone, which run one at a time."""

    step: Step
    uri: str
    removed: tuple[DataFile, ...]
    written: Mapping[int, DataFile]
    partitions: tuple[int, ...]
    records_before: int
    watermarks: Mapping[int, int] = field(default_factory=dict)
    """Compaction: per partition, the clean watermark the rewrite needs."""


def compact_changelog(
    table: DeltaTable, *, min_files: int, tombstone_retention: timedelta, on_step: OnStep = None
) -> RetentionResult:
    """Compact every partition with at least ``min_files`` files: all its files but the newest
    (Kafka's active segment) become one file holding the last record of each key at its
    original offset, minus keys the newest file writes again (:mod:`deltastreams.sinks._internal.compaction`).
    A tombstone is dropped once its partition's stream time (largest record timestamp) is
    ``tombstone_retention`` past it; the clean watermark rises then, and is committed *before*
    the rewrite, so it is never lower than the log needs (a crash in between only makes some
    stores rebuild needlessly). :func:`prepare_compaction`, then :func:`commit_rewrite`."""
    prepared = prepare_compaction(table, min_files=min_files, tombstone_retention=tombstone_retention, on_step=on_step)
    if prepared is None:
        return RetentionResult(Step.COMPACT, table_location(table), watermarks=changelog_watermarks(table))
    return commit_rewrite(table, prepared, on_step=on_step)


def prepare_compaction(table: DeltaTable, *, min_files: int, tombstone_retention: timedelta, on_step: OnStep = None) -> PreparedRewrite | None:
    """The compacted files of ``table`` (a snapshot), written; None when no partition needs it."""
    uri = table_location(table)
    layout = _layout(table, uri)
    file_schema = _file_schema(table)
    plans = []
    for partition, mine in by_partition(snapshot_files(table)).items():
        if len(mine) < min_files:
            continue
        segment = mine[:-1]
        rows = pa.concat_tables([read_rows(uri, f.path, file_schema) for f in segment])
        later_keys = read_rows(uri, mine[-1].path, file_schema).column(layout.key_column).combine_chunks()
        horizon = max(f.max_timestamp for f in mine) - _ms(tombstone_retention)
        compacted = compact_rows(
            rows, key_column=layout.key_column, value_column=layout.value_column, tombstone_horizon=horizon, later_keys=later_keys
        )
        if len(segment) > 1 or compacted.rows.num_rows < rows.num_rows:
            plans.append((partition, segment, rows.num_rows, compacted))
    if not plans:
        return None
    written = {p: write_partition_file(uri, p, c.rows) for p, _, _, c in plans if c.rows.num_rows}
    _step(on_step, COMPACT_AFTER_WRITE)
    return PreparedRewrite(
        Step.COMPACT,
        uri,
        removed=tuple(f for _, segment, _, _ in plans for f in segment),
        written=written,
        partitions=tuple(p for p, _, _, _ in plans),
        records_before=sum(n for _, _, n, _ in plans),
        watermarks={p: c.watermark for p, _, _, c in plans},
    )


def commit_rewrite(table: DeltaTable, prepared: PreparedRewrite, *, on_step: OnStep = None) -> RetentionResult:
    """Commit a prepared compaction or optimize against ``table`` at its latest version (hold the
    application's commit lock): a compaction's raised clean watermarks first, then the rewrite. If
    a file it replaces is no longer in the table, or another writer commits first, the new files
    are deleted and nothing is committed."""
    uri, step, written = prepared.uri, prepared.step, prepared.written
    live = set(table.get_add_actions(flatten=True).column("path").to_pylist())
    if any(f.path not in live for f in prepared.removed):
        return _abandon(uri, written, step)
    version = None
    watermarks = changelog_watermarks(table) if step is Step.COMPACT else {}
    if step is Step.COMPACT:
        raised = {p: w for p, w in prepared.watermarks.items() if w > watermarks.get(p, 0)}
        if raised:
            watermarks.update(raised)
            if not set_properties(table, {WATERMARKS_PROPERTY: json.dumps({str(p): o for p, o in sorted(watermarks.items())})}):
                return _abandon(uri, written, step)
            version = table.version()
            _step(on_step, COMPACT_AFTER_WATERMARK)
    removed = list(prepared.removed)
    parameters, metrics = optimize_info(list(prepared.partitions), removed, list(written.values()))
    if step is Step.COMPACT:
        # Recorded as delta-spark's REORG ... APPLY (PURGE): a rewrite (dataChange = false, so Delta's
        # streaming readers skip it) that drops rows no reader of the table's state needs, here the
        # records a later one of the same key supersedes.
        info = {"kind": step.value, "watermarks": {str(p): o for p, o in sorted(watermarks.items())}}
        operation, parameters = "REORG", {"predicate": parameters["predicate"], "applyPurge": True}
        metrics = {**metrics, "numDeletedRows": prepared.records_before - sum(f.num_records for f in written.values())}
    else:
        info, operation = {"kind": step.value, "files": len(removed)}, "OPTIMIZE"
    committed = commit_actions(
        table,
        rewrite_actions(removed, written.values(), now_ms=_now(None)),
        info,
        operation=operation,
        parameters=parameters,
        metrics=metrics,
        isolation="SnapshotIsolation",
    )
    if committed is None:
        _abandon(uri, written, step)
        return RetentionResult(step, uri, version=version, conflict=True, watermarks=watermarks)
    _step(on_step, COMPACT_AFTER_COMMIT if step is Step.COMPACT else OPTIMIZE_AFTER_COMMIT)
    return RetentionResult(
        step,
        uri,
        version=committed,
        files_removed=len(removed),
        files_added=len(written),
        records_before=prepared.records_before,
        records_after=sum(f.num_records for f in written.values()),
        bytes_before=sum(f.size for f in removed),
        bytes_after=sum(f.size for f in written.values()),
        watermarks=watermarks,
    )


# -- small files of sink topics (Delta's optimize) --------------------------------------------------


def optimize_files(
    table: DeltaTable,
    *,
    min_files: int,
    target_file_bytes: int,
    consumed: Mapping[int, int] | None = None,
    fan_in: int | None = None,
    on_step: OnStep = None,
) -> RetentionResult:
    """In every partition with at least ``min_files`` files, merge runs of consecutive files
    smaller than ``target_file_bytes`` into files of at most about that size, size class by size
    class (:func:`~deltastreams.sinks._internal.small_files.runs_to_merge`: ``fan_in`` files of
    one class at a time, ``min_files`` unless given, so a record is rewritten once per class, not at every optimize as when
    the growing last file took in every new small file: the 2-hour soak of issue 42 rewrote its
    whole sink, 2.5M records, every minute): the same records, offsets and order, added with
    ``dataChange = false``. ``consumed`` (first offset not yet consumed, per partition) leaves
    files a reader inside the application has not read alone. :func:`prepare_optimize`, then
    :func:`commit_rewrite`."""
    prepared = prepare_optimize(table, min_files=min_files, target_file_bytes=target_file_bytes, consumed=consumed, fan_in=fan_in, on_step=on_step)
    if prepared is None:
        return RetentionResult(Step.OPTIMIZE, table_location(table))
    return commit_rewrite(table, prepared, on_step=on_step)


def prepare_optimize(
    table: DeltaTable,
    *,
    min_files: int,
    target_file_bytes: int,
    consumed: Mapping[int, int] | None = None,
    fan_in: int | None = None,
    on_step: OnStep = None,
) -> PreparedRewrite | None:
    """The merged files of ``table`` (a snapshot), written; None when nothing is to merge."""
    fan_in = min_files if fan_in is None else fan_in
    uri = table_location(table)
    file_schema = _file_schema(table)
    bins: list[list[DataFile]] = []
    for partition, mine in by_partition(snapshot_files(table)).items():
        if len(mine) < min_files:
            continue
        eligible = mine if consumed is None else [f for f in mine if f.max_offset < consumed.get(partition, 0)]
        bins += runs_to_merge(eligible, fan_in=fan_in, target_file_bytes=target_file_bytes)
    written: dict[int, DataFile] = {}
    for i, run in enumerate(bins):
        written[i] = write_merged_file(uri, run[0].partition, [f.path for f in run], file_schema)
    if not written:
        return None
    _step(on_step, OPTIMIZE_AFTER_WRITE)
    removed = tuple(f for run in bins for f in run)
    return PreparedRewrite(
        Step.OPTIMIZE, uri, removed=removed, written=written, partitions=tuple(run[0].partition for run in bins), records_before=sum(f.num_records for f in removed)
    )


# -- orphans and removed files -----------------------------------------------------------------------


def delete_unreferenced(
    table: DeltaTable,
    *,
    decided: Iterable[DecidedBatch] = (),
    orphan_delay: timedelta,
    removed_delay: timedelta,
    on_step: OnStep = None,
    now_ms: int | None = None,
) -> RetentionResult:
    """Delete the data files under the table's directory (``partition=*/`` and ``_staging/``)
    that its snapshot does not reference and no batch in ``decided`` lists (pass the last
    decided batch of every sub-topology: decided but maybe not yet published). A file the log records as removed is deleted ``removed_delay`` after its removal;
    any other (an orphan: written, never committed) once its last modification is
    ``orphan_delay`` old, which keeps the files of batches still being written.

    The table's ``delta.deletedFileRetentionDuration`` is set to twice ``removed_delay`` (one
    commit, the first time): checkpoints must remember a removal past the moment its file may go,
    until a cleanup has seen it. With exactly ``removed_delay``, the next checkpoint forgot the
    removal within a minute of it becoming deletable, and a cleanup that came later took the file
    for an orphan and kept it ``orphan_delay`` long (a 30-minute soak: a third of a repartition
    topic's files). Run cleanups more often than ``removed_delay``. If the table has moved past
    ``table.version()``, nothing is done (``conflict``). :func:`find_unreferenced`, then
    :func:`delete_doomed`.
    """
    found, doomed = find_unreferenced(table, decided=decided, orphan_delay=orphan_delay, removed_delay=removed_delay, on_step=on_step, now_ms=now_ms)
    return delete_doomed(found, doomed, on_step=on_step)


def keep_removals(table: DeltaTable, removed_delay: timedelta, *, on_step: OnStep = None) -> RetentionResult | None:
    """Set the table's ``delta.deletedFileRetentionDuration`` to twice ``removed_delay`` (one
    exclusive commit, the first time; :func:`delete_unreferenced` says why): None if it already
    is, else the commit's result (``conflict`` if another writer committed first)."""
    wanted = interval_text(2 * removed_delay)
    if table.metadata().configuration.get(TOMBSTONE_RETENTION_PROPERTY) == wanted:
        return None
    uri = table_location(table)
    if not set_properties(table, {TOMBSTONE_RETENTION_PROPERTY: wanted}):
        return RetentionResult(Step.DELETE_FILES, uri, conflict=True)
    _step(on_step, FILES_AFTER_COMMIT)
    return RetentionResult(Step.DELETE_FILES, uri, version=table.version())


def find_unreferenced(
    table: DeltaTable,
    *,
    decided: Iterable[DecidedBatch] = (),
    orphan_delay: timedelta,
    removed_delay: timedelta,
    on_step: OnStep = None,
    now_ms: int | None = None,
    behind_ok: bool = False,
) -> tuple[RetentionResult, list[str]]:
    """What :func:`delete_unreferenced` deletes (paths), and its result but for the deletion
    (the property commit included). The table must not move while its directory is judged
    against it: hold the application's commit lock, or, ``behind_ok``, pass a snapshot its one
    writer (a running application, which set the property with :func:`keep_removals`) may commit
    past meanwhile. A file a later commit adds is then one of ``decided`` or younger than half
    ``orphan_delay`` (the application's committer refuses older ones), and a file a later commit
    removes is in the snapshot: either way it is kept."""
    uri = table_location(table)
    listing = list_log(uri)
    version = None
    if not behind_ok:
        if any(v > table.version() for v in listing.commits):
            return RetentionResult(Step.DELETE_FILES, uri, conflict=True), []
        committed = keep_removals(table, removed_delay, on_step=on_step)
        if committed is not None and committed.conflict:
            return committed, []
        if committed is not None:
            version = committed.version
            listing = list_log(uri)
    keep = {f.path for f in snapshot_files(table)}
    # Every table's files of the decided batches: paths are unique (a UUID each), and comparing
    # table URIs would depend on how each side spells them.
    keep |= {f.path for batch in decided for t in batch.tables.values() for f in t.files}
    removed = removed_files(uri, table.version(), listing)
    now = _now(now_ms)
    doomed: list[str] = []
    orphans = size = 0

    def candidate(rel: str) -> bool:
        removed_at = removed.get(rel)
        return rel not in keep and (removed_at is None or now - removed_at >= _ms(removed_delay))

    for rel, info in data_files(uri, candidate):
        removed_at = removed.get(rel)
        if removed_at is None and now - info.mtime_ns // 1_000_000 < _ms(orphan_delay):
            continue
        doomed.append(info.path)
        orphans += removed_at is None
        size += info.size
    return RetentionResult(Step.DELETE_FILES, uri, version=version, orphans_deleted=orphans, bytes_deleted=size), doomed


def delete_doomed(found: RetentionResult, doomed: list[str], *, on_step: OnStep = None) -> RetentionResult:
    """Delete the files :func:`find_unreferenced` found. No lock needed: no writer references an
    existing file again (an application adds only files it has just written, young or listed by
    a decided batch, and a file once removed is never added back)."""
    deleted = delete_files(found.uri, doomed, on_first=lambda: _step(on_step, FILES_DURING_DELETE))
    if doomed:
        _step(on_step, FILES_AFTER_DELETE)
    return replace(found, files_deleted=deleted)


# -- bounded Delta logs ------------------------------------------------------------------------------


def clean_log(table: DeltaTable, *, keep_versions: int, oldest_needed_version: int | None = None, on_step: OnStep = None) -> RetentionResult:
    """Delete the commit files (and older checkpoints) that no reader needs any more: those
    older than both the ``keep_versions`` latest versions and ``oldest_needed_version`` (the
    oldest version whose commit file a reader still has to read: for a downstream that consumed
    up to version ``v``, ``v + 1``), cut at a checkpoint, which then holds the table's state,
    ``txn`` versions included. delta-rs writes a checkpoint every 100 commits; one is written
    here only if the newest is further behind than that (a table committed to without the hook).
    Commits nothing."""
    if keep_versions < 1:
        raise RetentionError(f"keep_versions must be at least 1, got {keep_versions}", uri=table_location(table))
    uri = table_location(table)
    head = table.version()
    listing = list_log(uri)
    interval = checkpoint_interval(table)
    newest = listing.newest_checkpoint(head)
    if head > 0 and (newest is None or head - newest >= interval):
        table.create_checkpoint()
        _step(on_step, LOG_AFTER_CHECKPOINT)
        listing = list_log(uri)
    bound = head - keep_versions + 1
    if oldest_needed_version is not None:
        bound = min(bound, oldest_needed_version)
    cut = listing.newest_checkpoint(bound)
    if cut is None:
        return RetentionResult(Step.CLEAN_LOG, uri)
    # Oldest first: a crash part-way leaves a contiguous run of commit files after a gap.
    doomed = [listing.commits[v] for v in sorted(listing.commits) if v < cut]
    doomed += [p for v in sorted(listing.checkpoints) if v < cut for p in listing.checkpoints[v]]
    deleted = delete_files(uri, doomed, on_first=lambda: _step(on_step, LOG_DURING_DELETE))
    if doomed:
        _step(on_step, LOG_AFTER_DELETE)
    return RetentionResult(Step.CLEAN_LOG, uri, files_deleted=deleted)


def clean_transaction_log(txlog: TransactionLog, *, keep_versions: int, on_step: OnStep = None) -> RetentionResult:
    """:func:`clean_log` for a sub-topology's transaction log, keeping its last ``commit`` entry
    (what a starting instance rolls forward and resumes from) and everything after it."""
    return clean_log(txlog.table, keep_versions=keep_versions, oldest_needed_version=txlog.last_decided_version(), on_step=on_step)


# -- shared ------------------------------------------------------------------------------------------


def _step(on_step: OnStep, point: str) -> None:
    if on_step is not None:
        on_step(point)


def _now(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


def _ms(duration: timedelta) -> int:
    return int(duration / timedelta(milliseconds=1))


def _layout(table: DeltaTable, uri: str) -> TopicLayout:
    try:
        return TopicLayout.from_table(table.metadata().description or "", pa.schema(table.schema()))
    except (ValueError, KeyError) as e:
        raise RetentionError(f"the Delta table at {uri} is not a deltastreams topic ({e}); only topics can be compacted", uri=uri) from None


def _file_schema(table: DeltaTable) -> pa.Schema:
    """The columns of the table's data files (the partition column lives in their paths)."""
    schema = pa.schema(table.schema())
    return schema.remove(schema.get_field_index(PARTITION))


def _abandon(uri: str, written: Mapping[int, DataFile], step: Step) -> RetentionResult:
    """The commit lost against another writer: the files written for it are nobody's."""
    for f in written.values():
        delete_file(uri, f.path)
    log.info("%s of %s skipped: another writer committed first", step.value, uri)
    return RetentionResult(step, uri, conflict=True)
