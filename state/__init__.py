"""State stores: a key-value contract, RocksDB and in-memory backends, changelogging, and
time-keyed views (window stores, the suppression buffer)."""

from state._internal.changelogging import ChangeLoggingStore
from state._internal.memory import InMemoryKeyValueStore
from state._internal.rocksdb import RocksDBKeyValueStore
from state.restore import apply_changelog
from state.stores import ChangelogEntry, KeyValueStore
from state.window import NO_STREAM_TIME, TimeKeyedStore

__all__ = [
    "NO_STREAM_TIME",
    "ChangeLoggingStore",
    "ChangelogEntry",
    "InMemoryKeyValueStore",
    "KeyValueStore",
    "RocksDBKeyValueStore",
    "TimeKeyedStore",
    "apply_changelog",
]
