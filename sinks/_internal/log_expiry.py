"""Delta's ``delta.logRetentionDuration`` for a table whose writer knows its versions: commit files
older than the duration are deleted when a checkpoint is written, up to a checkpoint, so the
table's current state (and every version from that checkpoint on) stays readable, as delta-spark
does after its checkpoints (``delta.enableExpiredLogCleanup``).

Without listing the log: a writer that appends ten times a second keeps a log of hundreds of
thousands of commit files, and a listing of that directory per cleanup is what made delta-rs'
own commits slow (issue 42). Commit files are numbered without gaps from the oldest kept to the
head, and every cleanup deletes oldest first, so the oldest kept version is found once by binary
search over which commit files exist, and afterwards known; checkpoints are at multiples of the
table's checkpoint interval (or one version before: delta-rs' own). A cleanup looks at a few
files' modification times (the age Delta judges by) and deletes what expired, with the data files
those versions removed (a vacuum that needs no listing either): O(versions deleted), whatever the
log's length.

What a reader behind loses is its place, not records: an incremental reader whose next version's
commit file is gone gets :class:`~deltastreams.conf.errors.LogRetentionError` (docs/retention.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import unquote

import pyarrow.fs as pafs

from deltastreams.sinks._internal.delta_log import commit_path, read_commit
from deltastreams.sinks._internal.files import filesystem_for
from deltastreams.sinks._internal.log_files import delete_files

LOG_RETENTION_PROPERTY = "delta.logRetentionDuration"
REMOVED_FILE_RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
"""How long a checkpoint keeps a removed file's ``remove`` action (its tombstone); Delta's default
is a week."""
DELTA_DEFAULT_LOG_RETENTION = timedelta(days=30)
"""Delta's default when a table does not set the property."""

_UNITS = {
    "nanosecond": timedelta(microseconds=0.001),
    "microsecond": timedelta(microseconds=1),
    "millisecond": timedelta(milliseconds=1),
    "second": timedelta(seconds=1),
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(weeks=1),
}
_PART = re.compile(r"(-?\d+)\s+([a-z]+?)s?(?=\s|$)")


@dataclass(frozen=True)
class ExpiredLog:
    """What one cleanup deleted."""

    oldest: int
    """The oldest version the log now holds."""
    log_files: int
    """Commit files and checkpoints."""
    data_files: int
    """Data files removed before ``oldest``."""


def parse_interval(text: str) -> timedelta:
    """Delta's interval text (``interval 30 days``, ``interval 1 hour 30 minutes``,
    ``interval 600000 milliseconds``) as a duration; ValueError if it is not one."""
    body = text.strip().lower()
    body = body[len("interval") :].strip() if body.startswith("interval") else body
    parts = _PART.findall(body)
    if not parts or _PART.sub("", body).strip():
        raise ValueError(f"not a Delta interval: {text!r} (e.g. 'interval 7 days')")
    total = timedelta(0)
    for amount, unit in parts:
        if unit not in _UNITS:
            raise ValueError(f"not a Delta interval: {text!r} (unknown unit {unit!r})")
        total += int(amount) * _UNITS[unit]
    return total


def interval_text(duration: timedelta) -> str:
    """A duration as the property's text, in whole milliseconds."""
    return f"interval {int(duration / timedelta(milliseconds=1))} milliseconds"


def log_retention(configuration: dict[str, str]) -> timedelta:
    """The table's log retention: its property, else Delta's default (an unreadable value too:
    deleting less than asked is the safe side)."""
    raw = configuration.get(LOG_RETENTION_PROPERTY)
    if raw is None:
        return DELTA_DEFAULT_LOG_RETENTION
    try:
        return parse_interval(raw)
    except ValueError:
        return DELTA_DEFAULT_LOG_RETENTION


def checkpoint_path(table_uri: str, version: int) -> str:
    return f"{table_uri}/_delta_log/{version:020d}.checkpoint.parquet"


def _info(fs: pafs.FileSystem, path: str) -> pafs.FileInfo:
    return fs.get_file_info(path)


def expired_cut(table_uri: str, *, oldest: int, head: int, interval: int, retention: timedelta, now: datetime | None = None) -> int | None:
    """The newest checkpoint version ``c`` (``oldest < c <= head``) such that every commit file
    before it was written more than ``retention`` ago, judged by commit ``c - 1`` (versions are
    written in order); None if there is none. Checkpoints sit at multiples of ``interval`` (this
    project's writers) or one version before (delta-rs' own commits: 99, 199, ...); only one
    whose file is there counts."""
    fs, base = filesystem_for(table_uri)
    cutoff = (now or datetime.now(timezone.utc)) - retention

    def written_before_cutoff(version: int) -> bool:
        info = _info(fs, commit_path(base, version))
        return info.type != pafs.FileType.NotFound and info.mtime is not None and info.mtime <= cutoff

    def expired(k: int) -> bool:  # monotone in k: once a commit is too young, every later one is
        return written_before_cutoff(max(oldest, k * interval - 2))

    first, last = oldest // interval + 1, (head + 1) // interval
    if first > last or not expired(first):
        return None
    low, high = first, last  # expired(low) holds: find the last k for which it does
    while low < high:
        middle = (low + high + 1) // 2
        if expired(middle):
            low = middle
        else:
            high = middle - 1
    for k in range(low, first - 1, -1):  # a checkpoint another writer skipped: an older one
        for cut in (k * interval, k * interval - 1):
            if oldest < cut <= head and _info(fs, checkpoint_path(base, cut)).type != pafs.FileType.NotFound and written_before_cutoff(cut - 1):
                return cut
    return None


def delete_before(table_uri: str, cut: int, *, oldest: int, interval: int) -> ExpiredLog:
    """Delete what the versions before ``cut`` alone still need: the data files their commits
    removed (no version from ``cut`` on references them; no incremental reader can ask for a
    version that adds them once its commit file is gone), then the commit files ``[oldest, cut)``,
    oldest first (a crash part-way leaves the log without gaps, and the next cleanup reads the
    commits that are left again), then the single-file checkpoints before ``cut``."""
    _, base = filesystem_for(table_uri)
    removed = []
    for version in range(oldest, cut):
        for action in read_commit(table_uri, version) or ():
            if "remove" in action:
                removed.append(f"{base}/{unquote(action['remove']['path'])}")
    data = delete_files(table_uri, removed)
    commits = delete_files(table_uri, [commit_path(base, v) for v in range(oldest, cut)])
    checkpoints = delete_files(table_uri, [checkpoint_path(base, v) for v in range(oldest, cut) if v % interval in (0, interval - 1)])
    return ExpiredLog(cut, commits + checkpoints, data)

