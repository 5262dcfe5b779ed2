"""State stores: a key-value contract, RocksDB and in-memory backends, changelogging, time-keyed
views (window stores, the suppression buffer), and read-only views for queries."""

from state._internal.changelogging import ChangeLoggingStore
from state._internal.memory import InMemoryKeyValueStore
from state._internal.rocksdb import RocksDBKeyValueStore
from state.restore import apply_changelog
from state.stores import ChangelogEntry, KeyValueStore, ReadOnlyKeyValueStore, ReadOnlyWindowStore
from state.window import NO_STREAM_TIME, TimeKeyedStore

__all__ = [
    "NO_STREAM_TIME",
    "ChangeLoggingStore",
    "ChangelogEntry",
    "InMemoryKeyValueStore",
    "KeyValueStore",
    "ReadOnlyKeyValueStore",
    "ReadOnlyWindowStore",
    "RocksDBKeyValueStore",
    "TimeKeyedStore",
    "apply_changelog",
]
