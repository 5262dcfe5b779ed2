"""A table's checkpoint written from its previous checkpoint and the commits since, without
listing the log (issue 42).

delta-rs loads a table by listing its ``_delta_log`` (on a local disk, a ``stat`` per entry). A
topic appended to 10 times a second keeps 864,000 commit files under a one-day log retention,
and the checkpointing append (one in ``delta.checkpointInterval``) loaded the table to write its
checkpoint: 0.14-0.22 s at 34,000 commit files, linear in the log. But the writer knows where the
state stood (the previous checkpoint, named by ``_last_checkpoint``) and that the commit files
after it run without gaps; a checkpoint is that state: the live files (``add``), the removed
files not older than ``delta.deletedFileRetentionDuration`` (``remove``, their tombstones), the
newest ``txn`` of every app id, the newest ``metaData`` and ``protocol``, and the domains'
metadata. So this reads the previous checkpoint and the commits since, and writes the new
checkpoint in the previous one's own schema (delta-rs'), as one classic checkpoint file, then
the ``_last_checkpoint`` pointer: each in one atomic write, so a crash between them leaves the
older pointer, which readers accept.

A table this does not cover is checkpointed by delta-rs as before (:func:`write_checkpoint`
returns None): no previous single-file checkpoint, a commit file missing since, or a feature
that changes what a checkpoint holds (reader features such as deletion vectors or v2
checkpoints, parsed stats columns, transaction expiry).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import Schema

from deltastreams.sinks._internal import offsets
from deltastreams.sinks._internal.delta_log import last_checkpoint_pointer, read_commit
from deltastreams.sinks._internal.files import DataFile, filesystem_for
from deltastreams.sinks._internal.log_commit import put_log_file
from deltastreams.sinks._internal.log_expiry import REMOVED_FILE_RETENTION_PROPERTY, checkpoint_path, parse_interval

ACTIONS = ("add", "remove", "metaData", "protocol", "txn", "domainMetadata")
"""What a classic checkpoint holds; a previous checkpoint without one of these columns is not
built on."""
DELTA_DEFAULT_REMOVED_FILE_RETENTION = timedelta(weeks=1)
_UNCOVERED_PROPERTIES = ("delta.setTransactionRetentionDuration", "delta.checkpoint.writeStatsAsStruct")
"""Transaction expiry and parsed stats change what a checkpoint holds: delta-rs writes those."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checkpoint:
    """What a written checkpoint holds that its writer goes on with."""

    version: int
    files: list[DataFile]
    """The table's files at ``version``."""
    schema: pa.Schema
    """The table's schema (partition column included)."""


@dataclass
class _Since:
    """The commits after the previous checkpoint, replayed: the newest action per file path, app
    id and domain."""

    files: dict[str, tuple[str, dict]] = field(default_factory=dict)
    """Unquoted path -> ("add" or "remove", the action)."""
    txns: dict[str, dict] = field(default_factory=dict)
    domains: dict[str, dict] = field(default_factory=dict)
    metadata: dict | None = None
    protocol: dict | None = None

    def apply(self, actions: list[dict]) -> None:
        for action in actions:
            for kind in ("add", "remove"):
                if kind in action:
                    self.files[unquote(action[kind]["path"])] = (kind, action[kind])
            if "txn" in action:
                self.txns[action["txn"]["appId"]] = action["txn"]
            if "domainMetadata" in action:
                self.domains[action["domainMetadata"]["domain"]] = action["domainMetadata"]
            if "metaData" in action:
                self.metadata = action["metaData"]
            if "protocol" in action:
                self.protocol = action["protocol"]


def previous_checkpoint(uri: str) -> int | None:
    """The version of the single-file checkpoint ``_last_checkpoint`` names (None: none, or a
    multi-part one)."""
    pointer = last_checkpoint_pointer(uri)
    return None if pointer is None or pointer.get("parts") else int(pointer["version"])


def write_checkpoint(uri: str, version: int, *, now_ms: int | None = None) -> Checkpoint | None:
    """Write the checkpoint of ``version`` of the table at ``uri`` from the previous checkpoint
    and the commits after it; None (and nothing written) if this table is not covered."""
    previous = previous_checkpoint(uri)
    if previous is None or previous >= version:
        return None
    fs, path = filesystem_for(checkpoint_path(uri, previous))
    try:
        old = pq.read_table(path, filesystem=fs)
    except FileNotFoundError:
        return None
    if any(kind not in old.column_names for kind in ACTIONS) or _has_parsed_columns(old.schema):
        return None
    since = _Since()
    for v in range(previous + 1, version + 1):
        actions = read_commit(uri, v)
        if actions is None:
            return None
        since.apply(actions)
    try:
        metadata = since.metadata or _only(old, "metaData")
        protocol = since.protocol or _only(old, "protocol")
        configuration = dict(metadata.get("configuration") or {})
        if protocol.get("readerFeatures") or int(protocol.get("minReaderVersion", 1)) > 1 or any(p in configuration for p in _UNCOVERED_PROPERTIES):
            return None
        cutoff_ms = (now_ms if now_ms is not None else int(time.time() * 1000)) - _removed_file_retention_ms(configuration)
        written = _state(old, since, metadata, protocol, cutoff_ms)
    except (pa.ArrowException, TypeError, ValueError, KeyError):  # a previous checkpoint or an action unlike delta-rs' own: delta-rs writes it
        log.warning("%s: checkpoint %d left to delta-rs: its previous checkpoint (%d) or the commits since are not as expected", uri, version, previous, exc_info=True)
        return None

    live = written.column("add").drop_null().to_pylist()
    sink = pa.BufferOutputStream()
    pq.write_table(written, sink)
    body = sink.getvalue().to_pybytes()
    put_log_file(uri, f"{version:020d}.checkpoint.parquet", body)
    pointer = {"version": version, "size": written.num_rows, "sizeInBytes": len(body), "numOfAddFiles": len(live)}
    put_log_file(uri, "_last_checkpoint", json.dumps(pointer).encode())
    files = [offsets.added_file({**a, "partitionValues": dict(a["partitionValues"] or ())}, uri, None) for a in live]
    return Checkpoint(version, files, pa.schema(Schema.from_json(metadata["schemaString"])))


def _state(old: pa.Table, since: _Since, metadata: dict, protocol: dict, cutoff_ms: int) -> pa.Table:
    """The previous checkpoint's rows that still hold, and the commits' newest actions, in the
    previous checkpoint's schema."""
    kept = old.filter(_kept_file_rows(old, since.files, cutoff_ms))
    rows = [{"protocol": protocol}, {"metaData": metadata}]
    rows += [{"txn": t} for t in ({**_all(old, "txn", "appId"), **since.txns}).values()]
    rows += [{"domainMetadata": d} for d in ({**_all(old, "domainMetadata", "domain"), **since.domains}).values() if not d.get("removed")]
    for kind, action in since.files.values():
        if kind == "add" or int(action.get("deletionTimestamp") or 0) > cutoff_ms:
            rows.append({kind: action})
    return pa.concat_tables([kept, pa.Table.from_pylist(rows, schema=old.schema)])


def _kept_file_rows(old: pa.Table, changed: dict[str, tuple[str, dict]], cutoff_ms: int) -> pa.ChunkedArray:
    """Which rows of the previous checkpoint go on: its adds and unexpired removes of files the
    commits since did not add or remove again (those come from the commits). Judged by column: a
    topic's checkpoint holds tens of thousands of tombstones (a row each per removed small
    file), and a Python object per row made this the part of the checkpointing append that grew
    with them."""
    keep, changed_paths = None, pa.array(list(changed), pa.string())
    for kind in ("add", "remove"):
        column = old.column(kind)
        paths = _unquoted(pc.struct_field(column, "path"))
        rows = pc.and_kleene(column.is_valid(), pc.invert(pc.is_in(paths, value_set=changed_paths.cast(paths.type))))
        if kind == "remove":
            rows = pc.and_kleene(rows, pc.greater(pc.fill_null(pc.struct_field(column, "deletionTimestamp"), 0), cutoff_ms))
        keep = rows if keep is None else pc.or_kleene(keep, rows)
    return pc.fill_null(keep, False)


def _unquoted(paths: pa.ChunkedArray) -> pa.ChunkedArray:
    """Paths as the commits' actions are keyed (:class:`_Since`): URL-unquoted. Only a path with
    an escape changes, and the project's own file names have none."""
    if not pc.any(pc.match_substring(paths, "%")).as_py():
        return paths
    return pa.chunked_array([pa.array([None if p is None else unquote(p) for p in paths.to_pylist()], paths.type)])


def _only(old: pa.Table, kind: str) -> dict:
    (row,) = old.column(kind).drop_null().to_pylist()
    return _as_json(row)


def _all(old: pa.Table, kind: str, key: str) -> dict[str, dict]:
    return {row[key]: _as_json(row) for row in old.column(kind).drop_null().to_pylist()}


def _as_json(row: dict) -> dict:
    """A checkpoint row as the commit file's action (maps as objects), null fields left out."""
    out = {}
    for name, value in row.items():
        if value is None:
            continue
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            value = dict(value)
        elif isinstance(value, dict):
            value = _as_json(value)
        out[name] = value
    return out


def _has_parsed_columns(schema: pa.Schema) -> bool:
    """delta-spark's ``stats_parsed`` / ``partitionValues_parsed``: not built here."""
    add = schema.field("add").type
    return any(add.field(i).name.endswith("_parsed") for i in range(add.num_fields))


def _removed_file_retention_ms(configuration: dict[str, str]) -> int:
    text = configuration.get(REMOVED_FILE_RETENTION_PROPERTY)
    retention = parse_interval(text) if text else DELTA_DEFAULT_REMOVED_FILE_RETENTION
    return int(retention.total_seconds() * 1000)
