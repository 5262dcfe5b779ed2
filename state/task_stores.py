"""A task's stores on the local disk, kept open between batches, caught up with their committed
changelogs.

Invariant: a local store holds a prefix of its committed changelog, never more. A batch's writes
stay pending in memory (:class:`deltastreams.state.ChangeLoggingStore`) and never reach the store directly;
the store advances only from the committed changelog, when the next batch catches it up. So a
crash at any point leaves the store at most behind, never ahead, and catching up is the same code
as restoring: apply the changelog from the offset the store records (``applied-offset``) to the
committed end.

Long-lived: one :class:`TaskStores` lives as long as the process that runs the task (its task
host), with its RocksDB stores open. After a batch it keeps that batch's changes in memory; when
the next batch's position shows that exactly the changelog file that batch wrote was committed,
they are applied without reading the file back (*promotion*). Otherwise (the batch was
abandoned, another process ran the task meanwhile) the store reads the committed tail.

The changelogging views a batch gets are the same objects from batch to batch (until a store is
rebuilt or moved aside), so the operators built over them can outlive a batch (Kafka's processors
live as long as their task). :attr:`TaskStores.continuous` says whether the
last catch-up moved the stores only by what the previous batch here wrote: anything else (a
rebuild, entries another process committed) and such operators must be built again.

Rebuilt from offset 0 (wiped first): a store built from another incarnation of the changelog (its
Delta table id differs), one ahead of the changelog, and one behind the changelog's clean
watermark (compaction may have dropped tombstones it still needs). Self-healing: a store that
cannot be opened or read (corruption) is moved aside, kept for inspection with a log line saying
where, and rebuilt from its changelog.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.sinks import DataFile, open_table, read_data_file, snapshot_files
from deltastreams.state._internal.changelogging import ChangeLoggingStore
from deltastreams.state._internal.rocksdb import RocksDBKeyValueStore, StoreCorruptedError
from deltastreams.state.stores import ChangelogEntry

log = logging.getLogger(__name__)

APPLIED_OFFSET = "applied-offset"
CHANGELOG_ID = "changelog-table-id"


@dataclass(frozen=True)
class ChangelogPosition:
    """Where one store's changelog partition stands, as the committer knows it."""

    uri: str
    table_id: str
    partition: int
    end: int
    """Next offset: the store must hold entries ``[0, end)``."""
    recent_files: tuple[DataFile, ...] = ()
    """Files committed most recently to this partition (spares a Delta log scan when catching up,
    and tells whether the last batch's pending changes can be promoted)."""
    clean_offset: int = 0
    """Below this offset compaction may have dropped tombstones: a store that has applied less
    must be rebuilt from scratch."""


@dataclass
class RestoreStats:
    store: str
    entries: int = 0
    seconds: float = 0.0
    promoted: bool = False
    rebuilt: bool = False


@dataclass
class _Pending:
    """One batch's changes of one store, kept until the next batch says whether they committed."""

    path: str
    start: int
    end: int
    entries: list[ChangelogEntry]


@dataclass
class TaskStores:
    state_dir: str
    application_id: str
    task: str
    open_store: Callable[[str, Path], RocksDBKeyValueStore] = RocksDBKeyValueStore
    stores: dict[str, RocksDBKeyValueStore] = field(default_factory=dict)
    restores: list[RestoreStats] = field(default_factory=list)
    continuous: bool = False
    """After :meth:`prepare`: every store was open already and moved only by promoting the
    previous batch's own changes (or not at all). False after a rebuild, a quarantine, or a
    catch-up reading entries this process did not write."""
    _views: dict[str, ChangeLoggingStore] = field(default_factory=dict)
    _batch: dict[str, ChangeLoggingStore] = field(default_factory=dict)
    _pending: dict[str, _Pending] = field(default_factory=dict)

    def path(self, store: str) -> Path:
        return Path(self.state_dir) / self.application_id / self.task / store

    # -- one batch ----------------------------------------------------------------------------

    def prepare(self, positions: Mapping[str, ChangelogPosition]) -> dict[str, ChangeLoggingStore]:
        """Catch every store up with its committed changelog; returns fresh changelogging views
        (pending writes empty) for the batch."""
        self.restores = []
        self._batch = {}
        continuous = True
        for name, position in positions.items():
            continuous = continuous and name in self._views
            try:
                self._catch_up(name, position)
            except StoreCorruptedError as e:
                self.quarantine(name, e)
                self._catch_up(name, position)
                continuous = False
            stats = self.restores[-1]
            continuous = continuous and not stats.rebuilt and (stats.promoted or stats.entries == 0)
            self._batch[name] = self._view(name)
        self.continuous = continuous
        return dict(self._batch)

    def _view(self, name: str) -> ChangeLoggingStore:
        """The store's changelogging view, the same object from batch to batch."""
        view = self._views.get(name)
        if view is None or view.inner is not self.stores[name]:
            view = self._views[name] = ChangeLoggingStore(self.stores[name])
        else:
            view.moved()  # the catch-up wrote under it: views keeping derived state rebuild it
        return view

    def finish(self, written: Mapping[str, tuple[str, int]]) -> None:
        """After the task wrote its changelog files: ``written`` maps each store that changed to
        (file path, first offset) of its changelog file. The pending changes are kept for
        promotion; the stores themselves do not change."""
        self._pending = {}
        for name, store in self._batch.items():
            entries = store.changelog()
            if name in written and entries:
                path, start = written[name]
                self._pending[name] = _Pending(path, start, start + len(entries), entries)
            store.abort()
        self._batch = {}

    def abort(self) -> None:
        """The batch failed: forget its changes."""
        for store in self._batch.values():
            store.abort()
        self._batch = {}
        self._pending = {}

    def close(self) -> None:
        self.abort()
        for store in self.stores.values():
            store.close()
        self.stores.clear()
        self._views.clear()
        self.continuous = False

    # -- catching up --------------------------------------------------------------------------

    def _open(self, name: str) -> RocksDBKeyValueStore:
        if name not in self.stores:
            self.stores[name] = self.open_store(name, self.path(name))
        return self.stores[name]

    def _catch_up(self, name: str, position: ChangelogPosition) -> None:
        db = self._open(name)
        stats = RestoreStats(name)
        started = time.perf_counter()
        applied = int(db.get_meta(APPLIED_OFFSET) or b"0")
        known_id = (db.get_meta(CHANGELOG_ID) or b"").decode()
        pending = self._pending.pop(name, None)
        reason = None
        if known_id and known_id != position.table_id:
            reason = "it was built from another incarnation of its changelog"
        elif applied > position.end:
            reason = f"it is ahead of its changelog (applied {applied}, committed {position.end})"
        elif 0 < applied < position.clean_offset:
            reason = f"compaction dropped tombstones it still needs (applied {applied}, clean up to {position.clean_offset})"
        if reason:
            log.warning("store %s of task %s is rebuilt from its changelog: %s", name, self.task, reason)
            db = self._wipe(name)
            applied, stats.rebuilt = 0, True
        meta = {APPLIED_OFFSET: str(position.end).encode(), CHANGELOG_ID: position.table_id.encode()}
        if applied < position.end:
            if pending is not None and pending.start == applied and pending.end == position.end and any(
                f.path == pending.path for f in position.recent_files
            ):
                entries, stats.promoted = pending.entries, True
            else:
                entries = read_changelog(position, applied)
            db.write(entries, meta)
            stats.entries = len(entries)
        elif not known_id:
            db.write([], meta)
        stats.seconds = time.perf_counter() - started
        self.restores.append(stats)

    def _wipe(self, name: str) -> RocksDBKeyValueStore:
        self._views.pop(name, None)
        store = self.stores.pop(name, None)
        if store is not None:
            store.close()
        RocksDBKeyValueStore.destroy(self.path(name))
        return self._open(name)

    def quarantine(self, name: str, error: BaseException) -> None:
        """Move a corrupt store aside (kept for inspection) so it is rebuilt from its changelog."""
        self._views.pop(name, None)
        self.continuous = False
        store = self.stores.pop(name, None)
        if store is not None:
            try:
                store.close()
            except Exception:  # noqa: BLE001 - a corrupt store may not even close cleanly
                pass
        self._pending.pop(name, None)
        path = self.path(name)
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        if path.exists():
            path.rename(aside)
        log.warning(
            "store %s of task %s is corrupt (%s); moved aside to %s and rebuilt from its changelog",
            name, self.task, error, aside,
        )


def read_changelog(position: ChangelogPosition, start: int) -> list[ChangelogEntry]:
    """Committed entries ``[start, end)`` of one changelog partition, in offset order."""
    files = [f for f in position.recent_files if f.partition == position.partition]
    if not files or min(f.min_offset for f in files) > start:
        files = [f for f in snapshot_files(open_table(position.uri)) if f.partition == position.partition]
    files = [f for f in files if f.max_offset >= start and f.min_offset < position.end]
    if not files:
        return []
    table = pa.concat_tables([read_data_file(position.uri, f.path, f.partition) for f in files])
    offsets = table.column("offset")
    table = table.filter(pc.and_(pc.greater_equal(offsets, start), pc.less(offsets, position.end)))
    table = table.sort_by("offset")
    return [ChangelogEntry(k, v) for k, v in zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True)]


def replay(entries: Sequence[ChangelogEntry]) -> dict[bytes, bytes]:
    """The store a sequence of changelog entries describes (for checks and tests)."""
    state: dict[bytes, bytes] = {}
    for entry in entries:
        if entry.value is None:
            state.pop(entry.key, None)
        else:
            state[entry.key] = entry.value
    return state

