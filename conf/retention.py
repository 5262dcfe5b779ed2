"""RetentionConfig: how a running application keeps its storage bounded (``[retention]`` in
``defaults.toml``).

Intervals say how often each step runs, file counts and sizes when a step is worth running,
delays how long files outlive their last reference. At the file and command-line boundary every
duration is in milliseconds (``retention.purge_interval_ms``); here it is a ``timedelta``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from deltastreams.conf._parse import boolean, integer, invalid, ms_value, unknown_settings

PREFIX = "retention."


@dataclass(frozen=True, kw_only=True)
class RetentionConfig:
    """The retention steps of a running application and when they run."""

    enabled: bool = True
    """Off: nothing is ever removed (storage grows with every batch)."""
    purge_interval: timedelta = timedelta(seconds=30)
    """How often records of repartition topics that the downstream sub-topology has committed as
    consumed are removed (Kafka Streams' ``repartition.purge.interval.ms``)."""
    compaction_interval: timedelta = timedelta(minutes=1)
    """How often changelog partitions are checked for compaction."""
    compaction_min_files: int = 10
    """A changelog partition is compacted once it has this many files."""
    tombstone_retention: timedelta = timedelta(days=1)
    """A tombstone is dropped by compaction once its partition's stream time (largest record
    timestamp) is this far past it (Kafka's ``delete.retention.ms``). A store that had not applied
    a dropped tombstone is rebuilt from offset 0, so this only trades space for rebuilds."""
    optimize_interval: timedelta = timedelta(minutes=1)
    """How often small files of sink topics are merged."""
    optimize_min_files: int = 10
    """A partition of a sink topic is optimized once it has this many files, and then this many
    files of one size class (sizes within this factor of each other) lying together are merged
    into one: size tiers, so a record is rewritten about once per class, not at every optimize."""
    optimize_target_file_bytes: int = 64 * 1024 * 1024
    """Size of the files optimize writes; files at least this large are left alone."""
    sink_retention: timedelta | None = None
    """Remove the oldest files of sink topics once all their records are older than this (by
    record timestamp, against the wall clock; Kafka's ``retention.ms``). None: keep everything."""
    sink_retention_bytes: int | None = None
    """Remove the oldest files of a sink topic's partition while it holds more than this many
    bytes (Kafka's ``retention.bytes``). None: no bound."""
    file_cleanup_interval: timedelta = timedelta(minutes=1)
    """How often unreferenced data files are deleted from the tables' directories."""
    orphan_file_delay: timedelta = timedelta(hours=1)
    """A data file no commit ever referenced (written by an abandoned or still running batch) is
    deleted once it is this old. Must be far longer than any batch takes."""
    removed_file_delay: timedelta = timedelta(minutes=10)
    """A file removed from a table (purged, compacted, optimized) is deleted this long after its
    removal: readers of older versions, slow or zombie, may still read it (Kafka's
    ``file.delete.delay.ms``). The tables' ``delta.deletedFileRetentionDuration`` is twice this,
    so a removal is remembered until a cleanup has seen it deletable: keep
    ``file_cleanup_interval`` well below it."""
    log_cleanup_interval: timedelta = timedelta(minutes=1)
    """How often old commit files of the Delta logs (topics and transaction logs) are deleted."""
    log_keep_versions: int = 1000
    """Commit files of at least this many latest versions stay in every Delta log (and every
    version a reader still has to read)."""
    log_checkpoint_interval: int | None = None
    """The ``delta.checkpointInterval`` of every table the application creates (its internal and
    output topics, its transaction logs): a checkpoint every this many commits. None: Delta's
    default, 100. Tables that exist keep theirs. Fewer commits per checkpoint make a log cleanable
    sooner and a cold read of the table shorter, at the price of more checkpoint writes."""

    def __post_init__(self) -> None:
        for name in ("purge_interval", "compaction_interval", "optimize_interval", "file_cleanup_interval", "log_cleanup_interval"):
            if getattr(self, name) <= timedelta(0):
                raise invalid(f"{PREFIX}{name}_ms", "a positive number of milliseconds", ms_value(getattr(self, name)))
        for name in ("tombstone_retention", "orphan_file_delay", "removed_file_delay"):
            if getattr(self, name) < timedelta(0):
                raise invalid(f"{PREFIX}{name}_ms", "a number of milliseconds >= 0", ms_value(getattr(self, name)))
        for name in ("compaction_min_files", "optimize_min_files"):
            if getattr(self, name) < 2:
                raise invalid(f"{PREFIX}{name}", "at least 2 (merging fewer files gains nothing)", getattr(self, name))
        if self.optimize_target_file_bytes <= 0:
            raise invalid(f"{PREFIX}optimize_target_file_bytes", "a positive number of bytes", self.optimize_target_file_bytes)
        if self.sink_retention is not None and self.sink_retention <= timedelta(0):
            raise invalid(f"{PREFIX}sink_retention_ms", "positive or -1 (keep everything)", ms_value(self.sink_retention))
        if self.sink_retention_bytes is not None and self.sink_retention_bytes <= 0:
            raise invalid(f"{PREFIX}sink_retention_bytes", "positive or -1 (no bound)", self.sink_retention_bytes)
        if self.log_keep_versions < 1:
            raise invalid(f"{PREFIX}log_keep_versions", "at least 1", self.log_keep_versions)
        if self.log_checkpoint_interval is not None and self.log_checkpoint_interval < 1:
            raise invalid(f"{PREFIX}log_checkpoint_interval", "at least 1, or -1 for Delta's default (100)", self.log_checkpoint_interval)

    @classmethod
    def from_boundary(cls, raw: Mapping[str, Any]) -> RetentionConfig:
        """From boundary keys without the ``retention.`` prefix (``purge_interval_ms``, ...)."""
        known = sorted(BOUNDARY_KEYS)
        unknown = sorted(set(raw) - BOUNDARY_KEYS)
        if unknown:
            raise unknown_settings([PREFIX + k for k in unknown], [PREFIX + k for k in known], "retention settings")
        values: dict[str, Any] = {}
        for key, value in raw.items():
            setting = PREFIX + key
            if key == "enabled":
                values[key] = boolean(value, setting)
            elif key in _OPTIONAL:
                number = integer(value, setting, f"an integer, or -1 for {_OPTIONAL[key]}")
                name = key.removesuffix("_ms")
                values[name] = None if number == -1 else (timedelta(milliseconds=number) if key.endswith("_ms") else number)
            elif key.endswith("_ms"):
                values[key.removesuffix("_ms")] = timedelta(milliseconds=integer(value, setting, "a whole number of milliseconds"))
            else:
                values[key] = integer(value, setting)
        return cls(**values)


_DURATIONS = {f.name for f in fields(RetentionConfig) if "timedelta" in str(f.type)}
_OPTIONAL = {"sink_retention_ms": "no bound", "sink_retention_bytes": "no bound", "log_checkpoint_interval": "Delta's default (100)"}
"""Boundary keys where -1 means None, and what None means."""
BOUNDARY_KEYS = frozenset(f"{f.name}_ms" if f.name in _DURATIONS else f.name for f in fields(RetentionConfig))
"""Keys of the ``[retention]`` table: durations in milliseconds, suffixed ``_ms``."""
