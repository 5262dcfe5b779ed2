"""Commits this project writes itself, so retention steps go into a topic's history as Delta's own
operations, with the parameters and metrics delta-spark records for them (``DESCRIBE HISTORY``,
any tool reading ``commitInfo``): an optimize as ``OPTIMIZE``, removed files as ``DELETE``.
delta-rs records every commit of given actions as ``WRITE`` and refuses another operation name.
The commit protocol's own commits go through here too (:func:`append_at`, the transaction log's
entries): delta-rs lists the log and loads the table's new state around each commit, ~20-40 ms
a commit that grow with the log (10 ms at 200 versions, 29 ms at 1,200 here); one conditional
write against a version the caller already knows takes well under a millisecond on a local disk,
and one request on an object store.

A commit is the file ``_delta_log/<version>.json`` created only if absent (an atomic hard link
on a local disk, ``If-None-Match: *`` on an object store, through obstore: the object_store crate
delta-rs itself commits with), against the version the caller's table is loaded at (or the
version the caller knows): if anything else committed first, nothing changes and the caller is
told.
"""

from __future__ import annotations

import functools
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple
from urllib.parse import unquote, urlparse

import obstore
from deltalake import DeltaTable
from obstore.exceptions import AlreadyExistsError
from obstore.store import LocalStore, S3Store

from deltastreams.sinks._internal.files import PARTITION, DataFile
from deltastreams.sinks._internal.storage import current_storage_options, is_object_store

ENGINE = "deltastreams (delta-rs)"
INFO_KEY = "deltastreams"
"""commitInfo key of the JSON document describing a commit."""


def remove(f: DataFile, *, data_change: bool, now_ms: int) -> dict:
    return {
        "remove": {
            "path": f.path,
            "deletionTimestamp": now_ms,
            "dataChange": data_change,
            "extendedFileMetadata": True,
            "partitionValues": {PARTITION: str(f.partition)},
            "size": f.size,
        }
    }


def add(f: DataFile, *, data_change: bool) -> dict:
    return {
        "add": {
            "path": f.path,
            "partitionValues": {PARTITION: str(f.partition)},
            "size": f.size,
            "modificationTime": f.modification_time,
            "dataChange": data_change,
            "stats": f.stats_json(),
        }
    }


def optimize_info(partitions: Iterable[int], removed: Sequence[DataFile], added: Sequence[DataFile]) -> tuple[dict, dict]:
    """delta-spark's ``OPTIMIZE ... WHERE partition IN (...)`` parameters and metrics."""
    sizes = sorted(f.size for f in added) or [0]
    metrics = {
        "numRemovedFiles": len(removed),
        "numRemovedBytes": sum(f.size for f in removed),
        "numAddedFiles": len(added),
        "numAddedBytes": sum(f.size for f in added),
        "minFileSize": sizes[0],
        "p25FileSize": sizes[len(sizes) // 4],
        "p50FileSize": sizes[len(sizes) // 2],
        "p75FileSize": sizes[3 * len(sizes) // 4],
        "maxFileSize": sizes[-1],
        "numDeletionVectorsRemoved": 0,
    }
    predicate = [f"(partition IN ({', '.join(str(p) for p in sorted(set(partitions)))}))"]
    return {"predicate": json.dumps(predicate), "zOrderBy": "[]", "clusterBy": "[]", "auto": False}, metrics


def delete_info(predicates: Sequence[str], removed: Sequence[DataFile]) -> tuple[dict, dict]:
    """delta-spark's ``DELETE FROM ... WHERE`` parameters and metrics, for whole files removed."""
    metrics = {
        "numRemovedFiles": len(removed),
        "numRemovedBytes": sum(f.size for f in removed),
        "numDeletedRows": sum(max(f.num_records, 0) for f in removed),
        "numCopiedRows": 0,
        "numAddedFiles": 0,
        "numAddedBytes": 0,
        "numAddedChangeFiles": 0,
        "numDeletionVectorsAdded": 0,
        "numDeletionVectorsRemoved": 0,
        "numDeletionVectorsUpdated": 0,
    }
    return {"predicate": json.dumps([" OR ".join(f"({p})" for p in predicates)])}, metrics


def commit(
    table: DeltaTable,
    actions: Sequence[dict],
    *,
    operation: str,
    parameters: Mapping[str, object],
    metrics: Mapping[str, int],
    info: Mapping[str, object],
    isolation: str = "Serializable",
) -> int | None:
    """Commit ``actions`` as version ``table.version() + 1``, recorded as ``operation``; its
    version, or None if another commit has that version already."""
    return commit_at(
        table.table_uri.rstrip("/"), table.version(), actions, operation=operation, parameters=parameters, metrics=metrics, info=info, isolation=isolation
    )


def commit_at(
    uri: str,
    read_version: int,
    actions: Sequence[dict],
    *,
    operation: str,
    parameters: Mapping[str, object],
    metrics: Mapping[str, int],
    info: Mapping[str, object] | str,
    isolation: str = "Serializable",
    blind_append: bool = False,
) -> int | None:
    """Commit ``actions`` as version ``read_version + 1`` of the table at ``uri``; that version, or
    None if another commit has it already. Nothing is read: one conditional write. ``info``: the
    deltastreams document of the commit (a mapping, or its JSON text)."""
    commit_info = {
        "timestamp": int(time.time() * 1000),
        "operation": operation,
        "operationParameters": dict(parameters),
        "readVersion": read_version,
        "isolationLevel": isolation,
        "isBlindAppend": blind_append,
        "operationMetrics": {k: str(v) for k, v in metrics.items()},
        "engineInfo": ENGINE,
        "txnId": str(uuid.uuid4()),
        INFO_KEY: info if isinstance(info, str) else json.dumps(dict(info)),
    }
    body = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in [{"commitInfo": commit_info}, *actions])
    store, prefix = _store(uri.rstrip("/"))
    version = read_version + 1
    try:
        obstore.put(store, f"{prefix}_delta_log/{version:020d}.json", body.encode(), mode="create")
    except AlreadyExistsError:
        return None
    return version


CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"
DEFAULT_CHECKPOINT_INTERVAL = 100


def checkpoint_interval_property(interval: int | None) -> dict[str, str]:
    """The table property asking for a checkpoint every ``interval`` versions (none for None:
    Delta's default), for a table being created."""
    if interval is None:
        return {}
    if interval < 1:
        raise ValueError(f"checkpoint_interval must be at least 1, got {interval}")
    return {CHECKPOINT_INTERVAL_PROPERTY: str(interval)}


def checkpoint_interval(table: DeltaTable) -> int:
    """Every how many versions the table wants a checkpoint (its property, else delta-rs' default)."""
    return int(table.metadata().configuration.get(CHECKPOINT_INTERVAL_PROPERTY, DEFAULT_CHECKPOINT_INTERVAL))


def checkpoint_due(version: int, interval: int) -> bool:
    """Whether a commit written here as ``version`` is to be followed by a checkpoint, as
    delta-rs' post-commit hook does after its own commits: readers load a table from its newest
    checkpoint and the commits after it."""
    return version > 0 and version % interval == 0


def checkpoint_if_due(version: int, interval: int, table: Callable[[], DeltaTable]) -> None:
    """After a commit written here as ``version``: the checkpoint :func:`checkpoint_due` asks
    for, of the table ``table()`` loads (brought up to date first: it must include ``version``)."""
    if checkpoint_due(version, interval):
        loaded = table()
        loaded.update_incremental()
        loaded.create_checkpoint()


class KnownVersion(NamedTuple):
    """What a table's only writer knows without reading the table: the version it last wrote,
    and every how many versions the table wants a checkpoint."""

    version: int
    checkpoint_interval: int


def txn(app_id: str, version: int) -> dict:
    """Delta's transaction action: the idempotent writer's (app id, version)."""
    return {"txn": {"appId": app_id, "version": version, "lastUpdated": int(time.time() * 1000)}}


def put_log_file(uri: str, name: str, body) -> None:
    """Write ``_delta_log/<name>`` of the table at ``uri`` whole, replacing it: one atomic write
    (a renamed temporary file on a local disk, one request on an object store), so a reader never
    sees part of it. For files that are not commits (a checkpoint, ``_last_checkpoint``)."""
    store, prefix = _store(uri.rstrip("/"))
    obstore.put(store, f"{prefix}_delta_log/{name}", body, mode="overwrite")


def append_at(uri: str, read_version: int, files: Sequence[DataFile], *, txn_id: tuple[str, int] | None = None) -> int | None:
    """A blind append of ``files`` as version ``read_version + 1`` (see :func:`commit_at`),
    recorded as delta-rs and delta-spark record an append (``WRITE``, mode ``Append``)."""
    actions = ([txn(*txn_id)] if txn_id else []) + [add(f, data_change=True) for f in files]
    metrics = {"numFiles": len(files), "numOutputRows": sum(max(f.num_records, 0) for f in files), "numOutputBytes": sum(f.size for f in files)}
    parameters = {"mode": "Append", "partitionBy": json.dumps([PARTITION])}
    return commit_at(uri, read_version, actions, operation="WRITE", parameters=parameters, metrics=metrics, info={}, isolation="WriteSerializable", blind_append=True)


_S3_OPTIONS = {
    "AWS_ENDPOINT_URL": "endpoint",
    "AWS_ENDPOINT": "endpoint",
    "AWS_REGION": "region",
    "AWS_ACCESS_KEY_ID": "access_key_id",
    "AWS_SECRET_ACCESS_KEY": "secret_access_key",
    "AWS_SESSION_TOKEN": "session_token",
    "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "virtual_hosted_style_request",
}
"""delta-rs storage option -> obstore's S3 setting."""


def _store(uri: str):
    """The object store holding the table, and the table's path inside it (with a trailing /)."""
    if is_object_store(uri):
        parsed = urlparse(uri)
        options = current_storage_options()
        config = tuple(sorted((_S3_OPTIONS[k], v) for k, v in options.items() if k in _S3_OPTIONS))
        allow_http = options.get("AWS_ALLOW_HTTP", "false").lower() == "true"
        return _s3_store(parsed.netloc, config, allow_http), parsed.path.strip("/") + "/"
    return LocalStore(os.path.abspath(unquote(urlparse(uri).path) if uri.startswith("file://") else uri)), ""


@functools.lru_cache(maxsize=16)
def _s3_store(bucket: str, config: tuple[tuple[str, str], ...], allow_http: bool) -> S3Store:
    # One client per bucket and settings, kept: its connections stay open between commits (a new
    # client per commit paid a connection setup on every commit).
    return S3Store(bucket, config=dict(config), client_options={"allow_http": allow_http})


def commit_rewrite(uri: str, read_version: int, files: Sequence[DataFile], txns: Mapping[str, int]) -> int | None:
    """Records rewritten from another table (a rescale, :mod:`deltastreams.streams.rescale`): ``files`` added as
    version ``read_version + 1`` together with the idempotent writers' ``txn`` versions the old
    table held, so a writer rolling a decided batch forward finds it published already."""
    actions = [txn(app, version) for app, version in sorted(txns.items())] + [add(f, data_change=True) for f in files]
    metrics = {"numFiles": len(files), "numOutputRows": sum(max(f.num_records, 0) for f in files)}
    parameters = {"mode": "Append", "partitionBy": json.dumps([PARTITION])}
    return commit_at(uri, read_version, actions, operation="WRITE", parameters=parameters, metrics=metrics, info={"kind": "rescale"}, isolation="WriteSerializable")
