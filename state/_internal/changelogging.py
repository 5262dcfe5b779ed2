"""The changelogging wrapper: every change is a changelog entry, and stays pending until commit.

Reads see the pending changes over the underlying store. ``commit()`` applies them to the store in
one atomic write; ``abort()`` forgets them. This is what keeps a local store from ever being ahead
of what was committed: the runtime commits only once the batch's changelog is committed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence

from state.stores import ChangelogEntry, KeyValueStore


class ChangeLoggingStore:
    """A :class:`state.KeyValueStore` whose writes are pending changelog entries until committed."""

    def __init__(self, inner: KeyValueStore) -> None:
        self.inner = inner
        self.name = inner.name
        self._pending: dict[bytes, bytes | None] = {}

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        return self.inner.get(key)

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        missing = [k for k in keys if k not in self._pending]
        found = dict(zip(missing, self.inner.get_many(missing), strict=True))
        return [self._pending[k] if k in self._pending else found[k] for k in keys]

    def range(self, lo: bytes | None = None, hi: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        pending = sorted(
            (k, v) for k, v in self._pending.items() if (lo is None or k >= lo) and (hi is None or k < hi)
        )
        if not pending:
            yield from self.inner.range(lo, hi)
            return
        overridden = {k for k, _ in pending}
        inner = ((k, v) for k, v in self.inner.range(lo, hi) if k not in overridden)
        for key, value in heapq.merge(inner, pending, key=lambda kv: kv[0]):
            if value is not None:
                yield key, value

    def get_meta(self, key: str) -> bytes | None:
        return self.inner.get_meta(key)

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes) -> ChangelogEntry:
        self._pending[key] = value
        return ChangelogEntry(key, value)

    def delete(self, key: bytes) -> ChangelogEntry:
        self._pending[key] = None
        return ChangelogEntry(key, None)

    def put_many(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        self._pending.update(items)

    def changelog(self) -> list[ChangelogEntry]:
        """The pending changes, one entry per key changed (the last value wins)."""
        return [ChangelogEntry(k, v) for k, v in self._pending.items()]

    def commit(self, meta: Mapping[str, bytes] | None = None) -> None:
        self.inner.write(self.changelog(), meta)
        self._pending.clear()

    def abort(self) -> None:
        self._pending.clear()

    def close(self) -> None:
        self._pending.clear()
        self.inner.close()
