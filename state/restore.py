"""Rebuilding a store from its changelog: the changelog is the source of truth."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deltastreams.state.stores import ChangelogEntry, KeyValueStore


def apply_changelog(
    store: KeyValueStore, entries: Iterable[ChangelogEntry], meta: Mapping[str, bytes] | None = None
) -> int:
    """Apply changelog entries in order, atomically with ``meta``; returns how many."""
    batch = list(entries)
    store.write(batch, meta)
    return len(batch)
