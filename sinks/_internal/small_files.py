"""Small files of a topic that one writer appends to many times a second, merged as it goes, so the
table's file count (and with it every checkpoint and every load of the table) stays bounded.

A writer appending 10 times a second to 2 partitions adds 72,000 files an hour; a checkpoint
holds every one of them (12 MB at 44,000 files, ~250 ms to load and write here), and at a
million versions it would take seconds. So at each checkpoint the writer merges, per partition,
runs of consecutive files holding at least ``fan_in`` files of one size class (sizes within a
factor ``fan_in`` of each other; smaller files between them go along) into files of up to
``target_file_bytes``: a size-tiered scheme, in which a record is rewritten about
log_fan_in(target / first file size) times (4 times from 5 KB files to 64 MB), instead of the
growing last file being rewritten at every run as a merge of every small file would. The file
count then stays below about ``min_files`` per partition plus ``fan_in`` per size class, plus the
data over ``target_file_bytes``. The application's optimize of its sink topics
(:mod:`deltastreams.sinks.retention`) picks its files the same way.

Merged files are rewrites: the same records at the same offsets, added with ``dataChange =
false`` (incremental readers, ours and delta-spark's, never read them again), committed as
Delta's ``OPTIMIZE`` right after the version the table is loaded at, or not at all. The files
they replace stay on storage as long as the log holds a version that adds them
(:mod:`deltastreams.sinks._internal.log_expiry` deletes them with the commit files), so a reader
behind still reads every version it can ask for. Files without offsets (another writer's appends
that the log orders) are never merged: their order would be lost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pyarrow as pa

from deltastreams.sinks._internal import log_commit
from deltastreams.sinks._internal.exclusive import by_partition, rewrite_actions
from deltastreams.sinks._internal.files import PARTITION, DataFile, delete_file, write_merged_file

FAN_IN = 10
MIN_FILES = 100
"""A partition is looked at once it holds this many files: fewer cost a checkpoint nothing worth
a rewrite (and small topics keep the files their appends wrote)."""
TARGET_FILE_BYTES = 64 * 1024 * 1024
_SMALLEST_CLASS_BYTES = 1024


@dataclass(frozen=True)
class Merged:
    version: int | None
    """The commit that merged them; None if nothing was merged, or another writer committed
    first (then nothing changed)."""
    removed: int = 0
    added: int = 0


def size_class(size: int, fan_in: int) -> int:
    return max(0, int(math.log(max(size, 1) / _SMALLEST_CLASS_BYTES, fan_in)))


def runs_to_merge(files: list[DataFile], *, fan_in: int, target_file_bytes: int) -> list[list[DataFile]]:
    """One partition's files (offset order): the groups to merge, each of at most
    ``target_file_bytes``.

    Size class by size class, smallest first: a run of consecutive mergeable files (with offsets,
    below the target, not already taken by a smaller class) all of this class or smaller is merged
    once it holds ``fan_in`` files of this class. The merged file is about ``fan_in`` times their
    size, a class up, so a record is rewritten about once per class; and a smaller file between files of one class
    (a batch that wrote less) goes with them instead of splitting their run for ever, which it did
    when a run had to be of one class only."""
    sizes = [size_class(f.size, fan_in) if 0 <= f.size < target_file_bytes and f.min_offset >= 0 else None for f in files]
    taken = [False] * len(files)
    groups: list[list[DataFile]] = []
    for level in sorted({c for c in sizes if c is not None}):
        run: list[int] = []
        for i in [*range(len(files)), None]:  # None: the end closes the last run
            if i is not None and not taken[i] and sizes[i] is not None and sizes[i] <= level:
                run.append(i)
                continue
            if sum(sizes[j] == level for j in run) >= fan_in:
                groups += _cut(files, run, target_file_bytes)
                for j in run:
                    taken[j] = True
            run = []
    return sorted((g for g in groups if len(g) > 1), key=lambda g: g[0].min_offset)


def _cut(files: list[DataFile], run: list[int], target_file_bytes: int) -> list[list[DataFile]]:
    """The run's files in groups of consecutive files of at most ``target_file_bytes`` together."""
    groups: list[list[DataFile]] = [[]]
    size = 0
    for j in run:
        if groups[-1] and size + files[j].size > target_file_bytes:
            groups.append([])
            size = 0
        groups[-1].append(files[j])
        size += files[j].size
    return groups


def merge_small_files(
    uri: str,
    version: int,
    files: list[DataFile],
    schema: pa.Schema,
    *,
    fan_in: int | None = None,
    min_files: int | None = None,
    target_file_bytes: int | None = None,
) -> Merged:
    """Merge the runs :func:`runs_to_merge` finds in every partition holding at least
    ``min_files`` of ``files`` (the table's files at ``version``, the version to commit after;
    ``schema`` the table's); written files of a commit that lost are deleted. Unset arguments
    take this module's constants as they are at the call."""
    fan_in = FAN_IN if fan_in is None else fan_in
    min_files = MIN_FILES if min_files is None else min_files
    target_file_bytes = TARGET_FILE_BYTES if target_file_bytes is None else target_file_bytes
    groups = [
        g
        for partition_files in by_partition(files).values()
        if len(partition_files) >= min_files
        for g in runs_to_merge(partition_files, fan_in=fan_in, target_file_bytes=target_file_bytes)
    ]
    if not groups:
        return Merged(None)
    schema = schema.remove(schema.get_field_index(PARTITION))
    written = [write_merged_file(uri, g[0].partition, [f.path for f in g], schema) for g in groups]
    removed = [f for g in groups for f in g]
    parameters, metrics = log_commit.optimize_info({g[0].partition for g in groups}, removed, written)
    committed = log_commit.commit_at(
        uri,
        version,
        rewrite_actions(removed, written, now_ms=int(time.time() * 1000)),
        operation="OPTIMIZE",
        parameters=parameters,
        metrics=metrics,
        info={"kind": "merge_small_files", "files": len(removed)},
        isolation="SnapshotIsolation",
    )
    if committed is None:
        for f in written:
            delete_file(uri, f.path)
        return Merged(None)
    return Merged(committed, len(removed), len(written))
