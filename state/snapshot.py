"""A store's committed contents, read from its changelog at one Delta version and kept in memory
for queries (:mod:`deltastreams.streams.query`), refreshed from the versions committed since.

It reads what a restore reads (:func:`deltastreams.state.read_changelog`): every partition's
entries in offset order, later entries winning, tombstones deleting. One Delta version covers
every partition of the changelog (a batch publishes all its partitions in one commit), so the
snapshot is one consistent cut of the whole store.

Refreshing reads only the files the newer commits added, and of them only the entries at or past
each partition's applied end: changelog compaction rewrites old entries into new files
(``dataChange = false``, skipped) and a rewritten entry below the applied end is never applied
again, so a compaction can never move a key back to an older value.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf.errors import LogRetentionError
from deltastreams.sinks import DataFile, files_added, latest_version, open_table, read_data_file, snapshot_files


@dataclass
class ChangelogSnapshot:
    """The store a changelog describes at Delta version ``version`` (plus any ``extra`` committed
    files applied on top: a decided batch not yet published)."""

    uri: str
    version: int
    entries: dict[bytes, bytes] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    """Per partition, one past the last offset applied."""
    generation: int = 0
    """Counts the applications of new entries; ``changed`` holds the keys the last one touched (for
    indexes kept beside the snapshot, updated incrementally)."""
    changed: list[bytes] = field(default_factory=list)
    _sorted: list[bytes] | None = None

    @classmethod
    def load(cls, uri: str, version: int | None = None) -> ChangelogSnapshot:
        table = open_table(uri, version)
        snapshot = cls(uri, table.version())
        snapshot.apply_files(snapshot_files(table))
        return snapshot

    # -- advancing ----------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Catch up with the versions committed since (one probe of the log when there are none);
        returns whether anything new was committed."""
        latest = latest_version(self.uri, self.version)
        if latest == self.version:
            return False
        try:
            added = files_added(self.uri, self.version, latest)
        except LogRetentionError:  # fell behind the retained commits: start again from the snapshot
            fresh = ChangelogSnapshot.load(self.uri, latest)
            self.entries, self.ends, self.version, self._sorted = fresh.entries, fresh.ends, fresh.version, None
            self.generation, self.changed = self.generation + 2, []  # skips a generation: indexes rebuild
            return True
        self.version = latest
        self.apply_files(added)
        return True

    def apply_files(self, files: Sequence[DataFile]) -> int:
        """Apply the entries of ``files`` past each partition's applied end, in offset order."""
        wanted = [f for f in files if f.max_offset < 0 or f.max_offset >= self.ends.get(f.partition, 0)]
        if not wanted:
            return 0
        rows = pa.concat_tables(
            [read_data_file(self.uri, f.path, f.partition).select(["partition", "offset", "key", "value"]) for f in wanted],
            promote_options="permissive",
        )
        ends = pa.array([self.ends.get(p, 0) for p in rows.column("partition").to_pylist()], pa.int64()) if self.ends else None
        if ends is not None:
            rows = rows.filter(pc.greater_equal(rows.column("offset"), ends))
        if rows.num_rows == 0:
            return 0
        rows = rows.sort_by([("partition", "ascending"), ("offset", "ascending")])
        keys, values = rows.column("key").to_pylist(), rows.column("value").to_pylist()
        entries = self.entries
        if not entries:  # a first load: the last entry per key wins, then drop the deletions
            entries.update(zip(keys, values, strict=True))
            for key in [k for k, v in entries.items() if v is None]:
                del entries[key]
        else:
            for key, value in zip(keys, values, strict=True):
                if value is None:
                    entries.pop(key, None)
                else:
                    entries[key] = value
        partitions = rows.column("partition").to_numpy()
        offsets = rows.column("offset").to_numpy()
        for p in np.unique(partitions):
            self.ends[int(p)] = max(self.ends.get(int(p), 0), int(offsets[partitions == p].max()) + 1)
        self._sorted = None
        self.generation += 1
        self.changed = keys
        return rows.num_rows

    # -- reading ------------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        return self.entries.get(key)

    def range(self, lo: bytes | None = None, hi: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Entries with ``lo <= key < hi`` in key order (``None``: unbounded)."""
        if self._sorted is None:
            self._sorted = sorted(self.entries)
        keys = self._sorted
        start = 0 if lo is None else bisect.bisect_left(keys, lo)
        stop = len(keys) if hi is None else bisect.bisect_left(keys, hi)
        entries = self.entries
        for key in keys[start:stop]:
            yield key, entries[key]

    def __len__(self) -> int:
        return len(self.entries)
