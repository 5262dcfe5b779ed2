"""Exclusive commits of file actions and table properties: against the version the caller's
``DeltaTable`` is loaded at (file actions as their file created only if absent, properties with
delta-rs' retries off), so a commit fails if anything else committed since. The table is then moved to the commit's own version, never past it: a later
version is someone else's, which the caller must still notice as such."""

from __future__ import annotations

from collections.abc import Iterable

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError

from deltastreams.sinks._internal import log_commit
from deltastreams.sinks._internal.files import DataFile


def commit_actions(table: DeltaTable, actions: list[dict], info: dict, *, operation: str, parameters: dict, metrics: dict, isolation: str = "Serializable") -> int | None:
    """One exclusive commit of ``actions`` (Delta log actions, :mod:`deltastreams.sinks._internal.log_commit`)
    recorded as Delta's ``operation``; its version, or None if another commit landed first."""
    expected = table.version() + 1
    version = log_commit.commit(table, actions, operation=operation, parameters=parameters, metrics=metrics, info=info, isolation=isolation)
    if version is None:
        return None
    _load(table, expected)
    return expected


def set_properties(table: DeltaTable, properties: dict[str, str]) -> bool:
    """One exclusive commit setting table properties; False if another commit landed first."""
    expected = table.version() + 1
    try:
        table.alter.set_table_properties(properties, raise_if_not_exists=False, commit_properties=CommitProperties(max_commit_retries=0))
    except CommitFailedError:
        return False
    _load(table, expected)
    return True


def _load(table: DeltaTable, version: int) -> None:
    table.update_incremental()
    if table.version() != version:
        table.load_as_version(version)


def remove_actions(files: Iterable[DataFile], *, data_change: bool, now_ms: int) -> list[dict]:
    return [log_commit.remove(f, data_change=data_change, now_ms=now_ms) for f in files]


def rewrite_actions(removed: Iterable[DataFile], added: Iterable[DataFile], *, now_ms: int) -> list[dict]:
    """Files replaced by others holding the same records: ``dataChange = false`` both ways."""
    return remove_actions(removed, data_change=False, now_ms=now_ms) + [log_commit.add(f, data_change=False) for f in added]


def by_partition(files: Iterable[DataFile]) -> dict[int, list[DataFile]]:
    """Files per partition, in offset order."""
    grouped: dict[int, list[DataFile]] = {}
    for f in sorted(files, key=lambda f: (f.partition, f.min_offset)):
        grouped.setdefault(f.partition, []).append(f)
    return grouped
