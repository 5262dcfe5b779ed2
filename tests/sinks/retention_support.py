"""Helpers shared by the retention tests: small topics on real Delta tables, and an independent
replay of a changelog (a dict, no store code)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from deltastreams.sinks import Topic, create_topic
from deltastreams.sinks._internal.delta_log import snapshot_files


def changelog(root, name="app-store-changelog", partitions=2) -> Topic:
    return create_topic(root, name, partitions=partitions, key_type=pa.binary(), value_type=pa.binary())


def append_changes(topic: Topic, changes) -> int:
    """``changes``: (key, value or None, partition, timestamp) tuples, appended in one commit."""
    return topic.append(
        pa.table(
            {
                "partition": pa.array([c[2] for c in changes], pa.int32()),
                "key": pa.array([c[0] for c in changes], pa.binary()),
                "value": pa.array([c[1] for c in changes], pa.binary()),
                "timestamp": pa.array([c[3] for c in changes], pa.int64()),
            }
        )
    ).version


def sink(root, name="out", partitions=2) -> Topic:
    return create_topic(root, name, partitions=partitions, key_type=pa.string(), value_type=pa.int64())


def append_values(topic: Topic, rows) -> int:
    """``rows``: (key, value, partition, timestamp) tuples, appended in one commit."""
    return topic.append(
        pa.table(
            {
                "partition": pa.array([r[2] for r in rows], pa.int32()),
                "key": pa.array([r[0] for r in rows], pa.string()),
                "value": pa.array([r[1] for r in rows], pa.int64()),
                "timestamp": pa.array([r[3] for r in rows], pa.int64()),
            }
        )
    ).version


def files_on_disk(uri: str) -> set[str]:
    base = Path(uri)
    return {str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def snapshot_paths(uri: str) -> set[str]:
    return {f.path for f in snapshot_files(DeltaTable(uri))}


def read_all_versions(topic: Topic) -> pa.Table:
    """Every record ever committed, read commit by commit as an incremental reader does."""
    return topic.read(after_version=0)
