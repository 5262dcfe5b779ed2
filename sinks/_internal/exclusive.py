"""Exclusive commits of file actions and table properties: against the version the caller's
``DeltaTable`` is loaded at, with delta-rs' retries off, so a commit fails if anything else
committed since. The table is then moved to the commit's own version, never past it: a later
version is someone else's, which the caller must still notice as such."""

from __future__ import annotations

import json
from collections.abc import Iterable

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction

from sinks._internal.files import PARTITION, DataFile

INFO_KEY = "deltastreams"
"""commitInfo key of the JSON document describing a commit."""


def commit_actions(table: DeltaTable, actions: list, info: dict) -> int | None:
    """One exclusive commit of ``actions``; its version, or None if another commit landed first."""
    expected = table.version() + 1
    try:
        table.create_write_transaction(
            actions,
            mode="append",
            schema=table.schema(),
            partition_by=[PARTITION],
            commit_properties=CommitProperties(custom_metadata={INFO_KEY: json.dumps(info)}, max_commit_retries=0),
        )
    except CommitFailedError:
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


def remove_actions(files: Iterable[DataFile], *, data_change: bool, now_ms: int) -> list[RemoveAction]:
    return [RemoveAction(f.path, data_change, now_ms, f.size, {PARTITION: str(f.partition)}) for f in files]


def rewrite_actions(removed: Iterable[DataFile], added: Iterable[DataFile], *, now_ms: int) -> list:
    """Files replaced by others holding the same records: ``dataChange = false`` both ways."""
    adds = [AddAction(f.path, f.size, {PARTITION: str(f.partition)}, f.modification_time, False, f.stats_json()) for f in added]
    return remove_actions(removed, data_change=False, now_ms=now_ms) + adds


def by_partition(files: Iterable[DataFile]) -> dict[int, list[DataFile]]:
    """Files per partition, in offset order."""
    grouped: dict[int, list[DataFile]] = {}
    for f in sorted(files, key=lambda f: (f.partition, f.min_offset)):
        grouped.setdefault(f.partition, []).append(f)
    return grouped
