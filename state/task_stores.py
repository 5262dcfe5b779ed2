"""A task's stores on the local disk, caught up with their committed changelogs.

Invariant: a local store holds a prefix of its committed changelog, never more. A batch's writes
stay pending in memory (:class:`state.ChangeLoggingStore`) and are thrown away when the task ends;
they reach the store only from the changelog, once committed, when the next batch opens the store
and catches up. So a crash at any point leaves the store at most behind, never ahead, and
catching up is the same code as restoring: apply the changelog from the offset the store records
(``applied-offset``) to the committed end. A store built from another incarnation of the changelog
(its Delta table id differs) or ahead of the changelog is wiped and rebuilt from offset 0.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from sinks import AddedFile, read_data_file, snapshot_files
from state._internal.changelogging import ChangeLoggingStore
from state._internal.rocksdb import RocksDBKeyValueStore
from state.stores import ChangelogEntry

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
    recent_files: tuple[AddedFile, ...] = ()
    """Files committed most recently to this partition (spares a Delta log scan when catching up)."""


@dataclass
class RestoreStats:
    store: str
    entries: int = 0
    seconds: float = 0.0


@dataclass
class TaskStores:
    state_dir: str
    application_id: str
    task: str
    positions: Mapping[str, ChangelogPosition]
    stores: dict[str, ChangeLoggingStore] = field(default_factory=dict)
    restores: list[RestoreStats] = field(default_factory=list)

    def path(self, store: str) -> Path:
        return Path(self.state_dir) / self.application_id / self.task / store

    def open(self) -> dict[str, ChangeLoggingStore]:
        for name, position in self.positions.items():
            self.stores[name] = ChangeLoggingStore(self._caught_up(name, position))
        return self.stores

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
        self.stores.clear()

    def _caught_up(self, name: str, position: ChangelogPosition) -> RocksDBKeyValueStore:
        db = RocksDBKeyValueStore(name, self.path(name))
        stats = RestoreStats(name)
        applied = int(db.get_meta(APPLIED_OFFSET) or b"0")
        known_id = (db.get_meta(CHANGELOG_ID) or b"").decode()
        if (known_id and known_id != position.table_id) or applied > position.end:
            log.warning(
                "store %s of task %s is from another changelog or ahead of it (applied %d, committed %d): rebuilding",
                name, self.task, applied, position.end,
            )
            db.close()
            RocksDBKeyValueStore.destroy(self.path(name))
            db = RocksDBKeyValueStore(name, self.path(name))
            applied = 0
        if applied < position.end:
            started = time.perf_counter()
            entries = read_changelog(position, applied)
            db.write(entries, {APPLIED_OFFSET: str(position.end).encode(), CHANGELOG_ID: position.table_id.encode()})
            stats.entries, stats.seconds = len(entries), time.perf_counter() - started
        elif not known_id:
            db.write([], {APPLIED_OFFSET: str(position.end).encode(), CHANGELOG_ID: position.table_id.encode()})
        self.restores.append(stats)
        return db


def read_changelog(position: ChangelogPosition, start: int) -> list[ChangelogEntry]:
    """Committed entries ``[start, end)`` of one changelog partition, in offset order."""
    files = [f for f in position.recent_files if f.partition == position.partition]
    if not files or min(f.min_offset for f in files) > start:
        from deltalake import DeltaTable

        files = [f for f in snapshot_files(DeltaTable(position.uri)) if f.partition == position.partition]
    files = [f for f in files if f.max_offset >= start and f.min_offset < position.end]
    if not files:
        return []
    table = pa.concat_tables([read_data_file(position.uri, f.path, f.partition) for f in files])
    offsets = table.column("offset")
    table = table.filter(pc.and_(pc.greater_equal(offsets, start), pc.less(offsets, position.end)))
    table = table.sort_by("offset")
    return [ChangelogEntry(k, v) for k, v in zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True)]


def changelog_records(entries: Sequence[ChangelogEntry], partition: int, timestamp: int) -> pa.Table:
    """Changelog entries in record form for the changelog topic (key and value as bytes)."""
    n = len(entries)
    return pa.table(
        {
            "partition": pa.array([partition] * n, pa.int32()),
            "timestamp": pa.array([timestamp] * n, pa.int64()),
            "key": pa.array([e.key for e in entries], pa.binary()),
            "value": pa.array([e.value for e in entries], pa.binary()),
        }
    )
