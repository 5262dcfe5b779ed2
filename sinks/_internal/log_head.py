"""Where a topic's log ends, as the writers of this process know it: the head version and every
partition's next offset after it, so an append costs the same at version 100 and at version
1,000,000 (issue 42).

An append through delta-rs lists the whole ``_delta_log`` directory three times (before its
commit and twice after it, to load the new state; a ``stat`` per entry on a local disk: 66,000 of
them per append at 22,000 versions, ~300 ms), and the ends came from loading the table and all
its files (~200 ms at 44,000 files). Here the table is loaded once per process and topic; after
that, an append is:

1. one probe that the version known is still there (a log cleaned past it, or a topic deleted
   and created again, makes the head load again instead of writing a commit nobody reads);
2. the data files, with offsets from the known ends;
3. one conditional write of the next commit file (:func:`~deltastreams.sinks._internal.log_commit.append_at`);
   if another writer took that version, the files are deleted, the commit files written since
   are read (only those: :meth:`LogHead.catch_up`) and the append tries again;
4. every ``delta.checkpointInterval`` versions, the checkpoint delta-rs' own commits would have
   written, built from the previous checkpoint and the commits since
   (:mod:`deltastreams.sinks._internal.log_checkpoint`), a merge of small files
   (:mod:`deltastreams.sinks._internal.small_files`, which keeps the table's file count bounded)
   and the cleanup of commit files older than ``delta.logRetentionDuration``
   (:mod:`deltastreams.sinks._internal.log_expiry`): none of them lists the log.

Step 4 reads the previous checkpoint, whose size the merge and the tombstones' retention bound,
once per interval: that append takes longer than the others, the same at any length of the log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import pyarrow as pa
import pyarrow.fs as pafs

from deltastreams.sinks._internal import delta_log, log_checkpoint, log_expiry, offsets
from deltastreams.sinks._internal.delta_log import commit_path, read_commit, snapshot_files
from deltastreams.sinks._internal.files import DataFile, filesystem_for
from deltastreams.sinks._internal.log_commit import CHECKPOINT_INTERVAL_PROPERTY, DEFAULT_CHECKPOINT_INTERVAL, checkpoint_due, checkpoint_interval
from deltastreams.sinks._internal.small_files import merge_small_files
from deltastreams.sinks._internal.storage import open_table

log = logging.getLogger(__name__)


@dataclass
class Known:
    """What the writers of this process know of one table."""

    table_id: str
    version: int
    ends: dict[int, int]
    """Next offset of every partition that has records."""
    checkpoint_interval: int
    log_retention: timedelta
    oldest: int | None = None
    """The oldest commit file still in the log, once a cleanup has looked for it."""


@dataclass(frozen=True)
class Maintenance:
    """What an append's step 4 did."""

    checkpoint: int | None = None
    files_merged: int = 0
    """Small files replaced by merged ones (:mod:`deltastreams.sinks._internal.small_files`)."""
    log_files_deleted: int = 0
    data_files_deleted: int = 0
    """Files removed by versions the log no longer holds."""


class LogHead:
    """One table's head, shared by the writers of this process (:func:`log_head`); hold
    :attr:`lock` from reading the ends to the commit that uses them."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.lock = threading.RLock()
        self._known: Known | None = None

    def known(self, table_id: str | None = None) -> Known:
        """The head as known, after checking it still stands (one probe): loaded again if the log
        no longer holds the version known, or belongs to another table than ``table_id``."""
        known = self._known
        if known is None or (table_id is not None and table_id != known.table_id) or not self._commit_exists(known.version):
            self._known = known = self._load()
        return known

    def current(self, table_id: str | None = None) -> Known:
        """The head after every commit written so far (the commit files after the known version
        are read: none, when this process wrote the last one)."""
        self.known(table_id)
        self.catch_up()
        return self.known(table_id)

    def _commit_exists(self, version: int) -> bool:
        if version < 0:
            return True  # an empty log; creating the table wrote version 0
        fs, path = filesystem_for(commit_path(self.uri, version))
        return fs.get_file_info(path).type != pafs.FileType.NotFound

    def _load(self) -> Known:
        table = open_table(self.uri)
        metadata = table.metadata()
        return Known(
            table_id=metadata.id,
            version=table.version(),
            ends=delta_log.end_offsets(table),
            checkpoint_interval=checkpoint_interval(table),
            log_retention=log_expiry.log_retention(metadata.configuration),
        )

    def catch_up(self) -> None:
        """Read the commits written after the known version (by other writers), moving the ends
        past the records they added (a log cleaned past the known version loads the table again:
        :meth:`known`)."""
        known = self.known()
        while True:
            actions = read_commit(self.uri, known.version + 1)
            if actions is None:  # the head: the known version is there (known() probed it), and the log has no gaps
                return
            version = known.version + 1
            # A file that breaks the contract for other writers holds no offsets (readers dead-letter
            # or skip it): the ends move past the others only.
            adds = [offsets.judge(a["add"], self.uri, version) for a in actions if "add" in a and a["add"].get("dataChange", True)]
            offsets.assign(self.uri, version, adds, known.ends)
            for action in actions:
                if "metaData" in action:
                    configuration = action["metaData"].get("configuration") or {}
                    known.checkpoint_interval = int(configuration.get(CHECKPOINT_INTERVAL_PROPERTY, DEFAULT_CHECKPOINT_INTERVAL))
                    known.log_retention = log_expiry.log_retention(configuration)
            known.version = version

    def committed(self, version: int, files: Sequence[DataFile]) -> None:
        """This process committed ``files`` as ``version``, right after the known version."""
        known = self.known()
        known.version = version
        for f in files:
            if f.num_records > 0:
                known.ends[f.partition] = max(known.ends.get(f.partition, 0), f.max_offset + 1)

    def maintain(self, version: int) -> Maintenance:
        """After this process committed ``version``, when a checkpoint is due: the checkpoint, the
        merge of small files (committed as the next version), and the cleanup of expired commit
        files. A failure is logged, never raised: the append is committed, and the next due
        version tries again."""
        known = self.known()
        if not checkpoint_due(version, known.checkpoint_interval):
            return Maintenance()
        try:
            written = log_checkpoint.write_checkpoint(self.uri, version)
            if written is None:  # a table it does not cover: delta-rs, which lists the log
                table = open_table(self.uri, version)
                table.create_checkpoint()
                written = log_checkpoint.Checkpoint(version, snapshot_files(table), pa.schema(table.schema()))
            merged = merge_small_files(self.uri, version, written.files, written.schema)
            if merged.version is not None and known.version == version:
                self.committed(merged.version, ())
            if known.oldest is None:
                known.oldest = delta_log.oldest_commit(self.uri, version)
            cut = log_expiry.expired_cut(self.uri, oldest=known.oldest, head=version, interval=known.checkpoint_interval, retention=known.log_retention)
            expired = log_expiry.delete_before(self.uri, cut, oldest=known.oldest, interval=known.checkpoint_interval) if cut is not None else None
            if expired is not None:
                known.oldest = expired.oldest
            done = Maintenance(
                checkpoint=version,
                files_merged=merged.removed,
                log_files_deleted=expired.log_files if expired else 0,
                data_files_deleted=expired.data_files if expired else 0,
            )
            log.debug("%s at version %d: %s", self.uri, version, done)
            return done
        except Exception:  # noqa: BLE001 - the append itself is committed
            log.warning("checkpoint or log cleanup of %s at version %d failed; the next due version tries again", self.uri, version, exc_info=True)
            return Maintenance()


_HEADS: dict[str, LogHead] = {}
_HEADS_LOCK = threading.Lock()


def log_head(uri: str) -> LogHead:
    """The head of the table at ``uri`` shared by this process's writers."""
    with _HEADS_LOCK:
        if uri not in _HEADS:
            _HEADS[uri] = LogHead(uri)
        return _HEADS[uri]
