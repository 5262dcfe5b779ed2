"""In-memory key-value store: the tests' backend, same contract as RocksDB."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence

from deltastreams.state.stores import ChangelogEntry


class InMemoryKeyValueStore:
    """A dict plus a sorted key list (kept sorted on insert)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._data: dict[bytes, bytes] = {}
        self._keys: list[bytes] = []
        self._meta: dict[str, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        return [self._data.get(k) for k in keys]

    def range(self, lo: bytes | None = None, hi: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        start = 0 if lo is None else bisect.bisect_left(self._keys, lo)
        stop = len(self._keys) if hi is None else bisect.bisect_left(self._keys, hi)
        for key in self._keys[start:stop]:
            yield key, self._data[key]

    def get_meta(self, key: str) -> bytes | None:
        return self._meta.get(key)

    def write(self, changes: Iterable[ChangelogEntry], meta: Mapping[str, bytes] | None = None) -> None:
        self._meta.update(meta or {})
        for change in changes:
            if change.value is None:
                if self._data.pop(change.key, None) is not None:
                    del self._keys[bisect.bisect_left(self._keys, change.key)]
            else:
                if change.key not in self._data:
                    bisect.insort(self._keys, change.key)
                self._data[change.key] = change.value

    def __len__(self) -> int:
        return len(self._data)

    def close(self) -> None:
        pass
