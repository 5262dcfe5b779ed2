"""The changelogging wrapper: every change is a changelog entry, pending until it is committed.

Reads see the pending changes over the underlying store. A batch's pending changes never reach
the store directly: once its changelog is committed, ``abort()`` forgets them and ``restore()``
applies the committed entries. So a local store holds a prefix of its committed changelog and is
never ahead of it, whether the batch committed or not, and catching up is restoring.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence

from deltastreams.conf.errors import StateStoreError
from deltastreams.state.restore import apply_changelog
from deltastreams.state.stores import ChangelogEntry, KeyValueStore


class ChangeLoggingStore:
    """A :class:`deltastreams.state.KeyValueStore` whose writes are pending changelog entries until committed."""

    def __init__(self, inner: KeyValueStore) -> None:
        self.inner = inner
        self.name = inner.name
        self._pending: dict[bytes, bytes | None] = {}
        self.generation = 0
        """Counts the times the store's contents changed other than by this batch's writes (an
        abort or a restore): views that keep derived state for a batch rebuild it when it moves."""

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        return self.inner.get(key)

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not self._pending:  # a batch's first read: one multi-get, no merging
            return self.inner.get_many(keys)
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

    def pending_in(self, lo: bytes | None = None, hi: bytes | None = None) -> list[tuple[bytes, bytes | None]]:
        """The batch's pending changes with ``lo <= key < hi``, unordered, tombstones (None)
        included: for views that merge them over ``inner`` an array at a time instead of through
        :meth:`range`'s per-entry merge."""
        return [(k, v) for k, v in self._pending.items() if (lo is None or k >= lo) and (hi is None or k < hi)]

    def get_meta(self, key: str) -> bytes | None:
        return self.inner.get_meta(key)

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes) -> ChangelogEntry:
        self._pending[key] = value
        return ChangelogEntry(key, value)

    def delete(self, key: bytes) -> ChangelogEntry:
        self._pending[key] = None
        return ChangelogEntry(key, None)

    def put_many(self, keys: Sequence[bytes], values: Sequence[bytes | None]) -> None:
        """Many puts (a None value deletes) in one call: the vectorised stores' write path,
        without an entry object per key; the changelog is the same as for one put each."""
        if len(keys) != len(values):
            raise StateStoreError(f"store '{self.name}': put_many got {len(keys)} keys and {len(values)} values", store=self.name)
        self._pending.update(zip(keys, values, strict=True))

    def delete_many(self, keys: Sequence[bytes]) -> None:
        self._pending.update(dict.fromkeys(keys))

    def changelog(self) -> list[ChangelogEntry]:
        """The pending changes, one entry per key changed (the last value wins)."""
        return [ChangelogEntry(k, v) for k, v in self._pending.items()]

    def abort(self) -> None:
        """Forget the pending changes."""
        self._pending.clear()
        self.generation += 1

    # -- advancing from the changelog ----------------------------------------------------------

    def moved(self) -> None:
        """The underlying store advanced without this view (a task's catch-up wrote committed
        entries to it directly): views keeping derived state rebuild it."""
        self.generation += 1

    def restore(self, committed: Iterable[ChangelogEntry], meta: Mapping[str, bytes] | None = None) -> int:
        """Apply committed changelog entries to the store, in order and atomically with
        ``meta``; returns how many. The only way the store advances."""
        if self._pending:
            raise StateStoreError(
                f"store '{self.name}' has {len(self._pending)} pending changes: abort() them before restoring "
                "committed changelog entries (a store must never mix the two)",
                store=self.name,
            )
        self.generation += 1
        return apply_changelog(self.inner, committed, meta)

    def close(self) -> None:
        self._pending.clear()
        self.inner.close()
