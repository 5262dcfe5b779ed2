"""The parts of a topic's Delta log deltastreams needs: which files versions added, where each
partition ends, and atomic commits of files written elsewhere.

Records are only ever appended: retention removes whole files (``dataChange = true``, records
that are gone) or rewrites them (``dataChange = false``, the same records at the same offsets),
so the records a version range holds are exactly the files its commits added with
``dataChange = true``; reading those commit files is O(new commits), whatever the table's size.
Log retention deletes old commit files, never one a reader still has to read: a reader asking
for one gets :class:`LogRetentionError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction

from deltastreams.conf.errors import ExternalAppendError, LogRetentionError
from deltastreams.sinks._internal import offsets
from deltastreams.sinks._internal.files import PARTITION, DataFile, filesystem_for
from deltastreams.sinks._internal.storage import open_table


def table_location(table: DeltaTable) -> str:
    """The table's URI as deltastreams spells it: a local path for local tables (delta-rs says
    ``file:///...``), the URI otherwise; no trailing slash."""
    uri = table.table_uri.rstrip("/")
    return unquote(uri[len("file://") :]) if uri.startswith("file://") else uri


def commit_path(table_uri: str, version: int) -> str:
    return f"{table_uri}/_delta_log/{version:020d}.json"


def latest_version(table_uri: str, known: int) -> int:
    """The table's newest version, found by probing the commit files after ``known`` (a version
    already seen): one small request when nothing changed, however long the table's history.
    Keeping a loaded table current (``update_incremental``) costs time and memory that grow with
    the table's files: the input topic of a 30-minute soak made the driver ~230 MB larger."""
    fs, base = filesystem_for(table_uri)
    version = known
    while fs.get_file_info(commit_path(base, version + 1)).type != pafs.FileType.NotFound:
        version += 1
    return version


def oldest_commit(table_uri: str, head: int) -> int:
    """The oldest version whose commit file is still there (``head``'s must be): a binary search
    over which exist, since the kept ones run without gaps up to the head (log cleanup deletes
    oldest first)."""
    fs, base = filesystem_for(table_uri)
    low, high = 0, head  # the answer is in [low, high]; high's file exists
    while low < high:
        middle = (low + high) // 2
        if fs.get_file_info(commit_path(base, middle)).type == pafs.FileType.NotFound:
            low = middle + 1
        else:
            high = middle
    return low


def read_commit(table_uri: str, version: int) -> list[dict] | None:
    """The actions of one commit, or None if its JSON file is gone (cleaned-up log)."""
    fs, path = filesystem_for(commit_path(table_uri, version))
    try:
        with fs.open_input_stream(path) as stream:
            text = stream.read().decode()
    except FileNotFoundError:
        return None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def snapshot_files(table: DeltaTable, *, lenient: bool = False) -> list[DataFile]:
    """Every file of the table at the version ``table`` is loaded at. A file breaking the contract
    for external writers (a null partition, some offsets null and some not) fails the read,
    naming it, or, ``lenient``, is left out (it holds no offsets: what the ends need)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return []
    columns = actions.column_names
    paths = actions.column("path").to_pylist()
    parts = actions.column(f"partition.{PARTITION}").to_pylist()
    counts = actions.column("num_records").to_pylist()
    unknown = [-1] * len(paths)
    mins = actions.column("min.offset").to_pylist() if "min.offset" in columns else unknown
    maxs = actions.column("max.offset").to_pylist() if "max.offset" in columns else unknown
    sizes = actions.column("size_bytes").to_pylist()
    stamps = actions.column("max.timestamp").to_pylist() if "max.timestamp" in columns else unknown
    nulls = actions.column("null_count.offset").to_pylist() if "null_count.offset" in columns else unknown
    files = []
    for p, q, n, lo, hi, b, t, nulled in zip(paths, parts, counts, mins, maxs, sizes, stamps, nulls, strict=True):
        stats = {"minValues": {"offset": lo}, "nullCount": {"offset": nulled}} if lo is not None and lo >= 0 and nulled else {}
        judged = offsets.judge({"path": p, "partitionValues": {PARTITION: q}, "stats": json.dumps(stats)}, table_location(table), None)
        if isinstance(judged, offsets.RejectedFile):  # the checks of an add action's stats
            if lenient:
                continue
            raise judged.error(table_location(table))
        files.append(
            DataFile(
                path=unquote(p),
                partition=int(q),
                num_records=-1 if n is None else int(n),
                min_offset=-1 if lo is None else int(lo),
                max_offset=-1 if hi is None else int(hi),
                size=int(b),
                max_timestamp=-1 if t is None else int(t),
            )
        )
    return files


def files_added(table_uri: str, after_version: int | None, up_to_version: int) -> list[DataFile]:
    """Files committed in versions ``(after_version, up_to_version]``; all files if ``after_version``
    is None. Every file has its offsets: those of records another writer appended without them
    are assigned from the log (:mod:`deltastreams.sinks._internal.offsets`).

    A snapshot diff cannot stand in for commit files cleaned up by log retention: files rewritten
    with ``dataChange = false`` would look new and be read twice. So a missing commit file is an
    error (:class:`LogRetentionError`), as Kafka's OffsetOutOfRange is for a consumer that fell
    behind retention.
    """
    if after_version is None or after_version < 0:
        files = snapshot_files(open_table(table_uri, up_to_version))
        return _live_files(table_uri, up_to_version) if any(offsets.unassigned(f) for f in files) else files
    added: list[DataFile] = []
    ends: dict[int, int] | None = None
    for version in range(after_version + 1, up_to_version + 1):
        actions = read_commit(table_uri, version)
        if actions is None:
            oldest = _oldest_kept(table_uri, up_to_version)
            kept = f"the log now holds versions {oldest} to {latest_version(table_uri, oldest)}" if oldest is not None else "the log no longer holds them"
            raise LogRetentionError(
                f"the commit file of version {version} of {table_uri} is gone: log retention deleted it ({kept}; its writers keep "
                "commit files for the table's delta.logRetentionDuration, an application's own topics for retention.log_keep_versions). "
                f"Versions ({after_version}, {up_to_version}] cannot be read commit by commit; a reader must keep up within the "
                "retained versions, or start again from the snapshot",
                uri=table_uri,
                version=version,
                oldest=oldest,
            )
        judged = _judged_adds(table_uri, version, actions)
        if ends is None and not any(isinstance(f, offsets.RejectedFile) or offsets.unassigned(f) for f in judged):
            added.extend(judged)
            continue
        if ends is None:
            ends = ends_after(table_uri, version - 1)
        placed = offsets.assign(table_uri, version, judged, ends)
        if placed.rejected:
            raise placed.rejected[0].error(table_uri)
        added.extend(placed.files)
    return added


def _judged_adds(table_uri: str, version: int, actions: list[dict]) -> list:
    return [offsets.judge(a["add"], table_uri, version) for a in actions if "add" in a and a["add"].get("dataChange", True)]


@dataclass(frozen=True)
class VersionRead:
    """What one version of a topic adds, as an application reading it judges it."""

    version: int
    files: list[DataFile]
    """The files its records are in, with their offsets (assigned where the writer left them out)."""
    rejected: list[offsets.RejectedFile]
    """Files that break the contract for external writers: they hold no offsets."""
    schema: str | None = None
    """The table's schema (Delta's JSON schema string), if this version changed its metadata."""
    removed: tuple[str, ...] = ()
    """Files this version removed with their records (``dataChange = true``: a DELETE, an expiry;
    not a rewrite that keeps them, such as OPTIMIZE)."""


def read_version(table_uri: str, version: int) -> VersionRead:
    """The files ``version`` added, every one judged against where each partition ended before it
    (so offsets taken already are found whether or not the writer set them), and the schema it
    set, if it changed the table's metadata. Following the log version by version reads one
    commit file per version: the ends are cached (:class:`deltastreams.sinks._internal.offsets.OffsetLog`)."""
    actions = read_commit(table_uri, version)
    if actions is None:
        oldest = _oldest_kept(table_uri, version)
        raise LogRetentionError(
            f"the commit file of version {version} of {table_uri} is gone (log retention: its writers keep commit files for the "
            "table's delta.logRetentionDuration, an application's own topics for retention.log_keep_versions): a reader must "
            "keep up within the retained versions, or start again from the snapshot",
            uri=table_uri,
            version=version,
            oldest=oldest,
        )
    judged = _judged_adds(table_uri, version, actions)
    try:
        ends = ends_after(table_uri, version - 1)
    except LogRetentionError:
        if any(isinstance(f, DataFile) and offsets.unassigned(f) for f in judged):
            raise  # offsets to assign, and nothing to assign them from
        ends = None  # the history before is gone: offsets the writer set are taken as they are
    if ends is None:
        placed = offsets.Placed([f for f in judged if isinstance(f, DataFile)], [f for f in judged if isinstance(f, offsets.RejectedFile)])
    else:
        placed = offsets.assign(table_uri, version, judged, ends)
        offsets.offset_log(table_uri).remember(version, ends)
    metadata = next((a["metaData"] for a in actions if "metaData" in a), None)
    removed = tuple(unquote(a["remove"]["path"]) for a in actions if "remove" in a and a["remove"].get("dataChange", True))
    return VersionRead(version, placed.files, placed.rejected, metadata.get("schemaString") if metadata else None, removed)


def ends_after(table_uri: str, version: int) -> dict[int, int]:
    """Next offset per partition after ``version`` (``{}`` before the first): from this process's
    cache, else from the table's snapshot at that version if all its files carry offsets (one
    table load, whatever the length of its history), else by following its commits."""
    if version < 0:
        return {}
    log = offsets.offset_log(table_uri)
    known = log.known(version)
    if known is not None:
        return known
    try:
        table = open_table(table_uri, version)
    except DeltaError:  # that version cannot be loaded any more (log retention): from the commits that are left, if any
        return _ends_after(table_uri, version)
    files = snapshot_files(table, lenient=True)
    if any(offsets.unassigned(f) for f in files):
        return _ends_after(table_uri, version)
    ends: dict[int, int] = {}
    for f in files:
        ends[f.partition] = max(ends.get(f.partition, 0), f.max_offset + 1)
    log.remember(version, ends)
    return ends


def _oldest_kept(table_uri: str, up_to_version: int) -> int | None:
    """The oldest version a cleaned log still holds, for an error message: found between a
    version known to be there (the one asked for, or the newest checkpoint) and the start."""
    fs, base = filesystem_for(table_uri)
    for known in (up_to_version, _last_checkpoint(table_uri)):
        if known is not None and fs.get_file_info(commit_path(base, known)).type != pafs.FileType.NotFound:
            return oldest_commit(table_uri, known)
    return None


def end_offsets(table: DeltaTable) -> dict[int, int]:
    """Next offset of every partition that has records (files that break the contract for
    external writers hold none)."""
    files = snapshot_files(table, lenient=True)
    if any(offsets.unassigned(f) for f in files):
        return _ends_after(table_location(table), table.version())
    ends: dict[int, int] = {}
    for f in files:
        ends[f.partition] = max(ends.get(f.partition, 0), f.max_offset + 1)
    return ends


def _ends_after(table_uri: str, version: int) -> dict[int, int]:
    return offsets.offset_log(table_uri).ends_after(version, read_commit, lambda v: _known_start(table_uri, v))


def _known_start(table_uri: str, version: int) -> tuple[int, dict[int, int]]:
    """A version at or before ``version`` whose ends are known without older commit files, and
    those ends: before version 0, or a checkpoint whose files all carry their offsets."""
    if read_commit(table_uri, 0) is not None:
        return -1, {}
    checkpoint = _last_checkpoint(table_uri)
    files = snapshot_files(open_table(table_uri, checkpoint), lenient=True) if checkpoint is not None and checkpoint <= version else []
    if checkpoint is None or checkpoint > version or not files or any(offsets.unassigned(f) for f in files):
        raise offsets.missing_history(table_uri, version)
    ends: dict[int, int] = {}
    for f in files:
        ends[f.partition] = max(ends.get(f.partition, 0), f.max_offset + 1)
    return checkpoint, ends


def last_checkpoint_pointer(table_uri: str) -> dict | None:
    """Delta's ``_last_checkpoint`` pointer to the table's newest checkpoint (``version``, and
    ``parts`` for a multi-part one), or None if there is none."""
    fs, path = filesystem_for(f"{table_uri}/_delta_log/_last_checkpoint")
    try:
        with fs.open_input_stream(path) as stream:
            pointer = json.loads(stream.read().decode())
    except (FileNotFoundError, ValueError):
        return None
    return pointer if isinstance(pointer, dict) and "version" in pointer else None


def _last_checkpoint(table_uri: str) -> int | None:
    """The version of the table's newest checkpoint."""
    pointer = last_checkpoint_pointer(table_uri)
    return None if pointer is None else int(pointer["version"])


def _live_files(table_uri: str, version: int) -> list[DataFile]:
    """The table's files at ``version`` with offsets assigned, from its commits in order (a
    snapshot does not say in which order files without offsets came)."""
    start, ends = _known_start(table_uri, version)
    live: dict[str, DataFile] = {} if start < 0 else {f.path: f for f in snapshot_files(open_table(table_uri, start), lenient=True)}
    rewritten: set[str] = set()
    for v in range(start + 1, version + 1):
        actions = read_commit(table_uri, v)
        if actions is None:
            raise offsets.missing_history(table_uri, version)
        placed = offsets.assign(table_uri, v, _judged_adds(table_uri, v, actions), ends)
        if placed.rejected:
            raise placed.rejected[0].error(table_uri)
        for f in placed.files:
            live[f.path] = f
        for action in actions:
            if "remove" in action:
                path = unquote(action["remove"]["path"])
                live.pop(path, None)
                rewritten.discard(path)
            elif "add" in action and not action["add"].get("dataChange", True):
                f = offsets.added_file(action["add"], table_uri, v)
                live[f.path] = f
                if offsets.unassigned(f):
                    rewritten.add(f.path)
    if rewritten:
        path = sorted(rewritten)[0]
        raise ExternalAppendError(
            f"{table_uri}: file {path} holds records without offsets that a rewrite (OPTIMIZE, dataChange = false) moved "
            "there, so their order in the log is lost; do not rewrite files of a topic whose appended records have no offsets",
            uri=table_uri,
            path=path,
        )
    return sorted(live.values(), key=lambda f: (f.partition, f.min_offset))


def commit_files(
    table: DeltaTable,
    files: Sequence[DataFile],
    *,
    schema: pa.Schema,
    txn: tuple[str, int] | None = None,
    exclusive: bool = False,
) -> int:
    """Add ``files`` to the table in one atomic Delta commit; returns the new version.

    ``txn`` tags the commit with Delta's (app id, version) transaction action. ``exclusive``
    turns off delta-rs' rebase of blind appends, so the commit fails (CommitFailedError) if any
    other commit landed since ``table`` was loaded: offsets were assigned against that version.
    """
    actions = [
        AddAction(f.path, f.size, {PARTITION: str(f.partition)}, f.modification_time, True, f.stats_json())
        for f in files
    ]
    props = CommitProperties(
        app_transactions=[Transaction(txn[0], txn[1])] if txn else None,
        max_commit_retries=0 if exclusive else None,
    )
    table.create_write_transaction(
        actions, mode="append", schema=schema, partition_by=[PARTITION], commit_properties=props
    )
    table.update_incremental()
    return table.version()
