"""Data files of a topic: one Parquet file per topic partition and write, with Delta stats.

Files are written first (by any process: the driver, a Spark executor) and become part of the
topic only when a Delta commit adds them (:mod:`deltastreams.sinks._internal.delta_log`). Until then no reader
sees them, which is what makes a write invisible until its commit.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from deltastreams.sinks._internal.storage import is_object_store, object_store_filesystem

PARTITION = "partition"
OFFSET = "offset"
TIMESTAMP = "timestamp"


@dataclass(frozen=True)
class DataFile:
    """A data file of one topic partition, the one file reference of the project: written and
    not yet committed (every field known), staged (offsets -1 until merged), or named by a
    table's log (what its add action's stats say; -1 where they say nothing)."""

    path: str
    """Relative to the table root, e.g. ``partition=0/part-...parquet``."""
    partition: int
    num_records: int
    min_offset: int
    max_offset: int
    size: int = -1
    min_timestamp: int = -1
    max_timestamp: int = -1
    modification_time: int = 0

    def stats_json(self) -> str:
        return json.dumps(
            {
                "numRecords": self.num_records,
                "minValues": {OFFSET: self.min_offset, TIMESTAMP: self.min_timestamp},
                "maxValues": {OFFSET: self.max_offset, TIMESTAMP: self.max_timestamp},
                "nullCount": {OFFSET: 0, TIMESTAMP: 0},
            }
        )


def under_root(root: str, *parts: str) -> str:
    """A path under the application's root: a URI stays a URI (``pathlib`` would turn
    ``s3://b`` into ``s3:/b``), a local path becomes absolute."""
    root = str(root)
    if "://" in root:
        return "/".join([root.rstrip("/"), *parts])
    return str(Path(root).absolute().joinpath(*parts))


def filesystem_for(uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and in-filesystem path of a table URI or local path; an object
    store's with the process's storage options (:mod:`deltastreams.sinks._internal.storage`)."""
    if is_object_store(uri):
        return object_store_filesystem(uri)
    if "://" in uri:
        return pafs.FileSystem.from_uri(uri)
    return pafs.LocalFileSystem(), uri


STAGING = "_staging"
"""Directory (inside a table) of Arrow IPC files a task writes for a partition other tasks write
too: they are merged into Parquet by the partition's downstream task."""

# Measured here on 286k repartitioned pageviews: zstd level 1 (what sinks get: small, read later by
# anyone) 232 ms / 3.1 MB; lz4 with statistics only on offset and timestamp and dictionary
# encoding only where values repeat 78 ms / 5.8 MB. Repartition topics and changelogs are read
# once, by this project, and removed or compacted soon: they get the fast profile.
_DURABLE = {"compression": "zstd", "compression_level": 1}
_TRANSIENT = {"compression": "lz4", "write_statistics": [OFFSET, TIMESTAMP]}
_SAMPLE = 4096


def _dictionary_columns(rows: pa.Table) -> list[str]:
    """Columns worth dictionary-encoding: strings or binaries whose values repeat (judged on a
    sample). Encoding unique values only costs time before Parquet falls back to plain."""
    chosen = []
    for field in rows.schema:
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type) or pa.types.is_binary(field.type)):
            continue
        sample = rows.column(field.name).slice(0, _SAMPLE)
        if len(sample) and pc.count_distinct(sample).as_py() <= len(sample) // 2:
            chosen.append(field.name)
    return chosen


def _make_dir(fs: pafs.FileSystem, path: str) -> None:
    """A local filesystem needs the directory before a file goes in; an object store has none,
    and pyarrow would write an empty marker object per call: a round trip for every file."""
    if not isinstance(fs, pafs.S3FileSystem):
        fs.create_dir(path, recursive=True)


def write_partition_file(table_uri: str, partition: int, rows: pa.Table, *, staging: bool = False, transient: bool = False) -> DataFile:
    """Write ``rows`` (without the partition column, offsets already assigned) as one file:
    Parquet in the partition's directory, or Arrow IPC under ``_staging`` if ``staging``.
    ``transient``: a topic read once and soon removed (repartition, changelog): fast encoding."""
    fs, base = filesystem_for(table_uri)
    first = rows.column(OFFSET)[0].as_py()
    if staging:
        rel = f"{STAGING}/{partition}-{first:020d}-{uuid.uuid4().hex}.arrow"
        _make_dir(fs, f"{base}/{STAGING}")
        with fs.open_output_stream(f"{base}/{rel}") as stream, pa.ipc.new_file(stream, rows.schema) as writer:
            writer.write_table(rows)
    else:
        rel = _parquet_path(fs, base, partition, first)
        options = _TRANSIENT if transient else _DURABLE
        pq.write_table(rows, f"{base}/{rel}", filesystem=fs, use_dictionary=_dictionary_columns(rows), **options)
    return _written(fs, base, rel, partition, _Extent().add(rows))


def write_merged_file(table_uri: str, partition: int, rel_paths: Sequence[str], schema: pa.Schema) -> DataFile:
    """The rows of ``rel_paths`` (consecutive files of one partition, offsets assigned, read in
    the table's columns ``schema``) as one Parquet file, read and written one file at a time: a
    merge holds one of its files in memory, not all of them (merging a run of 64 MB of files held
    them all, decoded, at once, and a long-running writer's memory followed its largest merge)."""
    fs, base = filesystem_for(table_uri)
    extent, writer, rel = _Extent(), None, ""
    try:
        for path in rel_paths:
            rows = read_rows(table_uri, path, schema)
            if not rows.num_rows:
                continue
            if writer is None:
                rel = _parquet_path(fs, base, partition, rows.column(OFFSET)[0].as_py())
                writer = pq.ParquetWriter(f"{base}/{rel}", rows.schema, filesystem=fs, use_dictionary=_dictionary_columns(rows), **_DURABLE)
            writer.write_table(rows)
            extent.add(rows)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ValueError(f"nothing to merge in {table_uri} partition {partition}: its files hold no rows")
    return _written(fs, base, rel, partition, extent)


def _parquet_path(fs: pafs.FileSystem, base: str, partition: int, first_offset: int) -> str:
    _make_dir(fs, f"{base}/{PARTITION}={partition}")
    return f"{PARTITION}={partition}/part-{first_offset:020d}-{uuid.uuid4().hex}.parquet"


class _Extent:
    """Rows, first and last offset, and timestamp range of what a file holds, added up as its
    rows are written."""

    def __init__(self) -> None:
        self.rows = 0
        self.first = self.last = self.min_timestamp = self.max_timestamp = None

    def add(self, rows: pa.Table) -> _Extent:
        offsets, stamps = rows.column(OFFSET), pc.min_max(rows.column(TIMESTAMP))
        self.first = offsets[0].as_py() if self.first is None else self.first
        self.last = offsets[-1].as_py()
        low, high = stamps["min"].as_py(), stamps["max"].as_py()
        self.min_timestamp = min((t for t in (self.min_timestamp, low) if t is not None), default=None)
        self.max_timestamp = max((t for t in (self.max_timestamp, high) if t is not None), default=None)
        self.rows += rows.num_rows
        return self


def _written(fs: pafs.FileSystem, base: str, rel: str, partition: int, extent: _Extent) -> DataFile:
    return DataFile(
        path=rel,
        size=fs.get_file_info(f"{base}/{rel}").size,
        partition=partition,
        num_records=extent.rows,
        min_offset=extent.first,
        max_offset=extent.last,
        min_timestamp=extent.min_timestamp,
        max_timestamp=extent.max_timestamp,
        modification_time=int(time.time() * 1000),
    )


def write_staged_file(table_uri: str, partition: int, records: pa.Table) -> DataFile:
    """Write one partition's records in record form (no ``partition``, no offsets yet) as Arrow
    IPC under ``_staging``: the downstream task of that partition merges every writer's staged
    file into the partition's Parquet file, assigning offsets then."""
    fs, base = filesystem_for(table_uri)
    rel = f"{STAGING}/{partition}-{uuid.uuid4().hex}.arrow"
    _make_dir(fs, f"{base}/{STAGING}")
    with fs.open_output_stream(f"{base}/{rel}") as stream, pa.ipc.new_file(stream, records.schema) as writer:
        writer.write_table(records)
    stamps = pc.min_max(records.column(TIMESTAMP))
    return DataFile(
        path=rel,
        size=fs.get_file_info(f"{base}/{rel}").size,
        partition=partition,
        num_records=records.num_rows,
        min_offset=-1,
        max_offset=-1,
        min_timestamp=stamps["min"].as_py(),
        max_timestamp=stamps["max"].as_py(),
        modification_time=int(time.time() * 1000),
    )


def read_staged_file(table_uri: str, rel_path: str) -> pa.Table:
    fs, base = filesystem_for(table_uri)
    with fs.open_input_file(f"{base}/{rel_path}") as source:
        return pa.ipc.open_file(source).read_all()


def _read(table_uri: str, rel_path: str) -> pa.Table:
    fs, base = filesystem_for(table_uri)
    if rel_path.endswith(".arrow"):
        with fs.open_input_file(f"{base}/{rel_path}") as source:
            return pa.ipc.open_file(source).read_all()
    return pq.read_table(f"{base}/{rel_path}", filesystem=fs)


def read_raw_file(table_uri: str, rel_path: str) -> pa.Table:
    """One file's rows exactly as its writer wrote them (every column, ``partition`` too if the
    writer stored it): what a dead letter shows of a file the log rejected."""
    return _read(table_uri, rel_path)


def read_rows(table_uri: str, rel_path: str, schema: pa.Schema) -> pa.Table:
    """One file's rows in the table's columns (``schema``, without ``partition``): files written
    by different writers may order or type their columns differently."""
    table = _read(table_uri, rel_path)
    return table if table.schema == schema else table.select(schema.names).cast(schema)


def read_data_file(table_uri: str, rel_path: str, partition: int, first_offset: int = -1) -> pa.Table:
    """Read one committed file back, with its ``partition`` column restored in front. A file
    another writer appended without offsets gets ``first_offset`` onwards, in row order (where
    the log put it: :mod:`deltastreams.sinks._internal.offsets`); a ``partition`` column some writers (delta-spark)
    also store in the file gives way to the one of its path."""
    table = _read(table_uri, rel_path)
    if PARTITION in table.column_names:
        table = table.drop_columns([PARTITION])
    if OFFSET not in table.column_names or table.column(OFFSET).null_count == table.num_rows > 0:
        if first_offset < 0:
            raise ValueError(f"{table_uri}/{rel_path} has records without offsets, and no offsets were assigned to it")
        assigned = pa.array(np.arange(first_offset, first_offset + table.num_rows, dtype=np.int64))
        if OFFSET in table.column_names:
            table = table.set_column(table.schema.get_field_index(OFFSET), OFFSET, assigned)
        else:
            table = table.append_column(OFFSET, assigned)
    return table.add_column(0, PARTITION, pa.array(np.full(table.num_rows, partition, dtype=np.int32)))


def data_files(table_uri: str, wanted: Callable[[str], bool] | None = None) -> list[tuple[str, pafs.FileInfo]]:
    """(path relative to the table, file info) of every file deltastreams writes into a table's
    directory (``partition=*/``, ``_staging/``); anything else there (the log, files of other
    tools) is left out. ``wanted(path)``: only those files. On a local disk only those are
    stat'ed: file cleanup lists 12,000 files of a topic every minute and wants a few thousand
    (the names alone: 20 ms; stat'ing every file: 110 ms of the driver's time)."""
    fs, base = filesystem_for(table_uri)
    if isinstance(fs, pafs.LocalFileSystem):
        return _local_data_files(base, wanted)
    found = []
    for top in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        if top.type != pafs.FileType.Directory or not _holds_data(top.base_name):
            continue
        for info in fs.get_file_info(pafs.FileSelector(top.path, recursive=True)):
            rel = info.path[len(base) + 1 :]
            if info.type == pafs.FileType.File and (wanted is None or wanted(rel)):
                found.append((rel, info))
    return found


def _holds_data(name: str) -> bool:
    return name.startswith(f"{PARTITION}=") or name == STAGING


def _local_data_files(base: str, wanted: Callable[[str], bool] | None) -> list[tuple[str, pafs.FileInfo]]:
    found = []
    try:
        tops = [(entry.path, entry.name) for entry in os.scandir(base) if entry.is_dir() and _holds_data(entry.name)]
    except FileNotFoundError:
        return found
    while tops:
        directory, rel_dir = tops.pop()
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}"
            if entry.is_dir():
                tops.append((entry.path, rel))
            elif entry.is_file() and (wanted is None or wanted(rel)):
                try:
                    stat = entry.stat()
                except FileNotFoundError:
                    continue  # deleted since the listing
                found.append((rel, pafs.FileInfo(entry.path, type=pafs.FileType.File, mtime_ns=stat.st_mtime_ns, size=stat.st_size)))
    return found


def delete_file(table_uri: str, rel_path: str) -> None:
    fs, base = filesystem_for(table_uri)
    try:
        fs.delete_file(f"{base}/{rel_path}")
    except FileNotFoundError:
        pass


def rewrite_file(table_uri: str, data: DataFile, *, shift: int, schema: pa.Schema | None = None) -> DataFile:
    """Rewrite a not yet committed file with its offsets moved by ``shift`` (and cast to
    ``schema``, the table's schema without ``partition``); the old file is deleted."""
    table = _read(table_uri, data.path)
    if shift:
        index = table.schema.get_field_index(OFFSET)
        table = table.set_column(index, OFFSET, pc.add(table.column(OFFSET), pa.scalar(shift, pa.int64())))
    if schema is not None and table.schema != schema:
        table = table.select(schema.names).cast(schema)
    rewritten = write_partition_file(table_uri, data.partition, table)
    delete_file(table_uri, data.path)
    return rewritten
