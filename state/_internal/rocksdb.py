"""RocksDB key-value store (rocksdict, raw bytes mode) on the task's local disk."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from rocksdict import Options, ReadOptions, Rdict, WriteBatch

from deltastreams.state.stores import ChangelogEntry
from deltastreams.conf.errors import StateStoreError

_META_FAMILY = "deltastreams-meta"


class StoreCorruptedError(StateStoreError):
    """RocksDB found the store's files corrupt (a checksum or format error). The store is moved
    aside and rebuilt from its changelog; nothing needs to be done by hand."""

    def __init__(self, message: str, *, store: str, path: Path) -> None:
        super().__init__(message, store=store)
        self.path = path


def _corrupt(error: BaseException) -> bool:
    text = str(error).lower()
    return "corrupt" in text or "checksum" in text or "no such file" in text or "bad magic" in text


def held_elsewhere(error: BaseException) -> bool:
    """Whether RocksDB refused to open because another handle holds the store's lock. It names
    its lock file ("... <path>/LOCK: Resource temporarily unavailable"); a bare "lock" also matched
    "block checksum mismatch", so a corrupt store waited out the whole lock timeout before it was
    moved aside (a 61 s stall in the crash harness)."""
    return "/lock:" in str(error).lower()


WRITE_BUFFER_BYTES = 4 << 20
"""Size of a store's memtable before RocksDB flushes it to a file (two at most: one filling, one
flushing). RocksDB's default, 64 MiB, holds every overwrite and delete of a store until then: a
windowed count rewrites a few keys every batch and deletes them when windows close, so its
memtable (and the process's memory) grew ~0.5 MB/min for two hours in the 2-hour soak without
ever flushing, and each read walked a bigger memtable (batch time +13%). Kafka Streams uses 16 MiB
and flushes at every commit; the stores here hold windows, joins' buffers and tables, whose live
data is what the files keep, so a small memtable costs a flush every few minutes and bounds the
memory."""


META_WRITE_BUFFER_BYTES = 256 << 10
"""Memtable size of the store's meta family, which holds a few keys (the store's positions)
overwritten with every batch. RocksDB flushes a family only when its own memtable is full: at
4 MiB, ten batches a second filled it in about 1.5 hours, so every task host grew ~2.6 MB an hour
(+10% over the second hour of the 2-hour soak of issue 42) and kept every WAL file written since
the last flush. At 256 KiB it flushes every few minutes; its files hold a few keys each, which
compaction folds into one."""


def _options(write_buffer_bytes: int = WRITE_BUFFER_BYTES) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_write_buffer_size(write_buffer_bytes)
    options.set_max_write_buffer_number(2)
    return options


class RocksDBKeyValueStore:
    """One RocksDB database per store and task. Writes go through the WAL, so whatever ``write``
    returned survives a kill -9 of the process."""

    def __init__(self, name: str, path: str | Path, *, lock_timeout_s: float = 60.0) -> None:
        self.name = name
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = self._open(name, lock_timeout_s)
        self._meta = self._db.get_column_family(_META_FAMILY)

    def _open(self, name: str, lock_timeout_s: float) -> Rdict:
        # Another process may hold the store for a moment (a zombie instance finishing its task,
        # a Python worker still closing it): wait for its lock, as Kafka Streams waits for a
        # task's state directory.
        deadline = time.monotonic() + lock_timeout_s
        while True:
            try:
                return Rdict(str(self.path), options=_options(), column_families={_META_FAMILY: _options(META_WRITE_BUFFER_BYTES)})
            except Exception as e:  # noqa: BLE001 - rocksdict raises plain Exception for IO/lock errors
                if held_elsewhere(e) and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                error = e
                break
        if _corrupt(error):
            raise StoreCorruptedError(f"RocksDB store '{name}' at {self.path} is corrupt: {error}", store=name, path=self.path) from error
        raise StateStoreError(
            f"cannot open RocksDB store '{name}' at {self.path}: {error}. If another process holds it, stop that "
            "process; deltastreams waited 60 s for its lock.",
            store=name,
        ) from error

    def _failed(self, error: BaseException) -> StateStoreError:
        if _corrupt(error):
            return StoreCorruptedError(f"RocksDB store '{self.name}' at {self.path} is corrupt: {error}", store=self.name, path=self.path)
        return StateStoreError(f"RocksDB store '{self.name}' at {self.path} failed: {error}", store=self.name)

    def get(self, key: bytes) -> bytes | None:
        try:
            return self._db.get(key)
        except Exception as e:  # noqa: BLE001 - rocksdict raises plain Exception
            raise self._failed(e) from e

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        try:
            return self._db.get(list(keys))
        except Exception as e:  # noqa: BLE001 - rocksdict raises plain Exception
            raise self._failed(e) from e

    def range(self, lo: bytes | None = None, hi: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        read_options = ReadOptions()
        if hi is not None:
            read_options.set_iterate_upper_bound(hi)
        try:
            if lo is None:
                yield from self._db.items(read_opt=read_options)
            else:
                yield from self._db.items(from_key=lo, read_opt=read_options)
        except Exception as e:  # noqa: BLE001 - rocksdict raises plain Exception
            raise self._failed(e) from e

    def get_meta(self, key: str) -> bytes | None:
        try:
            return self._meta.get(key.encode())
        except Exception as e:  # noqa: BLE001 - rocksdict raises plain Exception
            raise self._failed(e) from e

    def write(self, changes: Iterable[ChangelogEntry], meta: Mapping[str, bytes] | None = None) -> None:
        batch = WriteBatch(raw_mode=True)
        for change in changes:
            if change.value is None:
                batch.delete(change.key)
            else:
                batch.put(change.key, change.value)
        if meta:
            family = self._db.get_column_family_handle(_META_FAMILY)
            for key, value in meta.items():
                batch.put(key.encode(), value, family)
            del family
        try:
            self._db.write(batch)
        except Exception as e:  # noqa: BLE001 - rocksdict raises plain Exception
            raise self._failed(e) from e

    def close(self) -> None:
        # Column-family views keep the database (and its LOCK) open: close them first.
        self._meta.close()
        self._db.close()

    @staticmethod
    def destroy(path: str | Path) -> None:
        shutil.rmtree(path, ignore_errors=True)
