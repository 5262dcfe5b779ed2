"""State stores: a key-value contract, RocksDB and in-memory backends, changelogging, time-keyed
views (window stores, the suppression buffer), read-only views for queries, and a task's stores
kept caught up with their committed changelogs."""

from deltastreams.state._internal.changelogging import ChangeLoggingStore
from deltastreams.state._internal.memory import InMemoryKeyValueStore
from deltastreams.state._internal.rocksdb import RocksDBKeyValueStore, StoreCorruptedError
from deltastreams.state.restore import apply_changelog
from deltastreams.state.stores import ChangelogEntry, KeyValueStore, ReadOnlyKeyValueStore, ReadOnlyWindowStore
from deltastreams.state.task_stores import APPLIED_OFFSET, ChangelogPosition, RestoreStats, TaskStores, read_changelog, replay
from deltastreams.state.window import NO_STREAM_TIME, TimeKeyedStore

__all__ = [
    "APPLIED_OFFSET",
    "NO_STREAM_TIME",
    "ChangeLoggingStore",
    "ChangelogEntry",
    "ChangelogPosition",
    "InMemoryKeyValueStore",
    "KeyValueStore",
    "ReadOnlyKeyValueStore",
    "ReadOnlyWindowStore",
    "RestoreStats",
    "RocksDBKeyValueStore",
    "StoreCorruptedError",
    "TaskStores",
    "TimeKeyedStore",
    "apply_changelog",
    "read_changelog",
    "replay",
]
