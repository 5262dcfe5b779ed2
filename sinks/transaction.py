"""The exactly-once commit protocol's transaction log (see docs/exactly-once.md).

One Delta table per sub-topology, holding no data, only commits: registrations of instances
(epochs) and decided batches, each a JSON document in the commit's ``commitInfo`` plus a Delta
``txn`` action. Every commit to it is exclusive (against the version this instance last saw), so
a registration by a newer instance makes an older instance's next batch commit fail: fencing.
Publishing a decided batch adds its files to each output table under
``txn(<application_id>/subtopology-<n>, seq)``, skipping tables that already have it.

What the decided state depends on (the application's topology) is kept as a property of the log's
table (Delta ``metaData.configuration``), set by the same exclusive commit as a decided batch
(:meth:`TransactionLog.keep_with_next_decision`): atomic with the state it describes, free for
every other batch, and, being table state, kept by every checkpoint when log retention deletes
old commits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from deltastreams.sinks._internal import log_commit
from deltastreams.sinks._internal.delta_log import commit_files, read_commit
from deltastreams.sinks._internal.files import DataFile
from deltastreams.sinks._internal.storage import create_table, open_table, table_exists
from deltastreams.conf.errors import CommitError, ProducerFencedError

log = logging.getLogger(__name__)

_SCHEMA = pa.schema([("unused", pa.int32())])
_KEY = "deltastreams"
EPOCH_APP = "epoch"
COMMIT_APP = "commit"


@dataclass(frozen=True)
class TablePublication:
    """The files a batch adds to one output table."""

    uri: str
    files: tuple[DataFile, ...]


@dataclass(frozen=True)
class DecidedBatch:
    seq: int
    epoch: int
    sources: dict[str, tuple[int, int]]
    """Per input topic (logical name), the versions ``(start, end]`` the batch consumed; for a
    topic in Kafka, offsets per partition ``{partition: next offset}`` instead of versions."""
    tables: dict[str, TablePublication] = field(default_factory=dict)
    """By logical topic name, in publication order."""
    exactly_once: bool = True
    """False: an at_least_once progress record, written after its tables were published (without
    txn tags): never rolled forward."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": "commit",
                "seq": self.seq,
                "epoch": self.epoch,
                "guarantee": "exactly_once" if self.exactly_once else "at_least_once",
                "sources": {t: {"start": start, "end": end} for t, (start, end) in self.sources.items()},
                "tables": {t: {"uri": p.uri, "files": [asdict(f) for f in p.files]} for t, p in self.tables.items()},
            }
        )

    @classmethod
    def from_json(cls, raw: dict) -> DecidedBatch:
        tables = {t: TablePublication(p["uri"], tuple(DataFile(**f) for f in p["files"])) for t, p in raw["tables"].items()}
        sources = {t: (_position(r["start"]), _position(r["end"])) for t, r in raw["sources"].items()}
        return cls(raw["seq"], raw["epoch"], sources, tables, raw.get("guarantee", "exactly_once") == "exactly_once")


def _position(raw):
    """A Delta topic's version, or a Kafka topic's offsets per partition (JSON keys are text)."""
    return {int(partition): offset for partition, offset in raw.items()} if isinstance(raw, dict) else raw


def _entry(actions: list[dict]) -> dict:
    """The deltastreams document of one transaction-log commit (empty if it has none)."""
    info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    return json.loads(info.get(_KEY, "{}"))


def decided_batches(uri: str) -> list[DecidedBatch]:
    """Every decided batch the transaction log at ``uri`` still holds, oldest first (read-only:
    for checks and tools; the protocol itself reads :meth:`TransactionLog.last_decided`)."""
    batches = []
    for version in range(1, open_table(uri).version() + 1):
        batch = decided_entry(read_commit(uri, version) or [])
        if batch is not None:
            batches.append(batch)
    return batches


def log_property(uri: str, key: str) -> str | None:
    """A property kept in the transaction log at ``uri`` (None: no such log, or not set); read-only."""
    if not table_exists(uri):
        return None
    return open_table(uri).metadata().configuration.get(key)


def decided_entry(actions: list[dict]) -> DecidedBatch | None:
    """The batch one transaction-log commit decided, if it decided one."""
    entry = _entry(actions)
    return DecidedBatch.from_json(entry) if entry.get("kind") == "commit" else None


class TransactionLog:
    def __init__(self, uri: str, txn_app_id: str, *, checkpoint_interval: int | None = None) -> None:
        """Opens the log at ``uri``, creating it if missing (``checkpoint_interval``: the new
        log's ``delta.checkpointInterval``; None: Delta's default, 100)."""
        self.uri = uri
        self.txn_app_id = txn_app_id
        """The app id of this sub-topology's ``txn`` actions on output tables."""
        if not table_exists(uri):
            configuration = log_commit.checkpoint_interval_property(checkpoint_interval) or None
            try:
                create_table(uri, _SCHEMA, mode="ignore", name="deltastreams transaction log", configuration=configuration)
            except Exception:  # noqa: BLE001 - another instance created it first: fine
                if not table_exists(uri):
                    raise
        self._table = open_table(uri)
        self._written = self._table.version()
        """The version of this instance's last commit to the log (or the version it opened):
        its next commit goes right after it or fails. Never moved by reading the log, so a
        registration by another instance since then always fences this one."""
        self.epoch = -1
        self.instance = ""
        self._pending_properties: dict[str, str] = {}

    # -- reading ------------------------------------------------------------------------------

    def current_epoch(self) -> int:
        self._table.update_incremental()
        version = self._table.transaction_version(EPOCH_APP)
        return -1 if version is None else version

    @property
    def table(self) -> DeltaTable:
        """The log's Delta table, loaded at least up to this instance's own last commit (those
        are written without loading it)."""
        if self._table.version() < self._written:
            self._table.update_incremental()
        return self._table

    def last_decided(self) -> DecidedBatch | None:
        """The latest ``commit`` entry, scanning back from the head of the log."""
        found = self._last_commit_entry()
        return found[1] if found is not None else None

    def last_decided_version(self) -> int | None:
        """The log version holding the latest ``commit`` entry (log retention keeps it)."""
        found = self._last_commit_entry()
        return found[0] if found is not None else None

    def _last_commit_entry(self) -> tuple[int, DecidedBatch] | None:
        self._table.update_incremental()
        if self._table.transaction_version(COMMIT_APP) is None:
            return None  # nothing ever decided (the txn version survives log cleanup, in checkpoints)
        for version in range(self._table.version(), 0, -1):
            actions = read_commit(self.uri, version)
            if actions is None:
                raise CommitError(
                    f"the transaction log {self.uri} no longer holds its last decided batch (commit files up to version "
                    f"{version} are gone): something other than deltastreams' log retention deleted them. The application "
                    "cannot tell where it stopped; restore the log's files or start it as a new application"
                )
            entry = _entry(actions)
            if entry.get("kind") == "commit":
                return version, DecidedBatch.from_json(entry)
        return None

    def property(self, key: str) -> str | None:
        """A property kept in the log (:meth:`keep_with_next_decision`), as last committed."""
        return self.table.metadata().configuration.get(key)

    # -- writing ------------------------------------------------------------------------------

    def keep_with_next_decision(self, properties: dict[str, str]) -> None:
        """Set ``properties`` of the log in the same commit as the next decided batch (so they
        become visible exactly when state produced under them does, and never without it)."""
        self._pending_properties.update(properties)

    def _metadata_action(self) -> dict:
        """The log table's metaData, with the pending properties set (a Delta metaData action
        replaces the whole of it)."""
        table = self.table
        metadata = table.metadata()
        action = {
            "id": metadata.id,
            "name": metadata.name,
            "description": metadata.description,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": table.schema().to_json(),
            "partitionColumns": list(metadata.partition_columns),
            "configuration": {**metadata.configuration, **self._pending_properties},
            "createdTime": metadata.created_time,
        }
        return {"metaData": {k: v for k, v in action.items() if v is not None}}

    def _commit(self, entry: str, txn: tuple[str, int], read_version: int, *, with_properties: bool = False) -> bool:
        """One exclusive commit of ``entry`` after ``read_version``; False if that version is
        taken. Written directly (:mod:`deltastreams.sinks._internal.log_commit`): delta-rs' commit of the same
        entry lists and reloads the log, 20-40 ms a decided batch."""
        actions = [log_commit.txn(*txn)]
        properties = with_properties and bool(self._pending_properties)
        if properties:
            actions.append(self._metadata_action())
        version = log_commit.commit_at(
            self.uri, read_version, actions, operation="WRITE", parameters={"mode": "Append"}, metrics={}, info=entry, blind_append=not properties
        )
        if version is None:
            return False
        if properties:
            self._pending_properties = {}
        self._written = version
        log_commit.checkpoint_if_due(version, log_commit.checkpoint_interval(self._table), lambda: self._table)
        return True

    def register(self, instance: str) -> int:
        """Take the next epoch (fencing every older instance); returns it."""
        for _ in range(20):
            epoch = self.current_epoch() + 1
            if not self._commit(json.dumps({"kind": "epoch", "epoch": epoch, "instance": instance}), (EPOCH_APP, epoch), self._table.version()):
                continue  # another instance registered concurrently: take the next epoch
            self.epoch, self.instance = epoch, instance
            return epoch
        raise CommitError(f"could not register in transaction log {self.uri}: too many concurrent registrations")

    def decide(self, batch: DecidedBatch) -> None:
        """The point of no return: record the batch, unless this instance has been fenced. (Under
        at_least_once: the progress record, after publication.)"""
        if self._commit(batch.to_json(), (COMMIT_APP, batch.seq), self._written, with_properties=True):
            return
        current = self.current_epoch()
        if current > self.epoch:
            raise ProducerFencedError(
                f"instance {self.instance} (epoch {self.epoch}) was fenced: epoch {current} registered in {self.uri}; "
                "another instance of this application took over, this one must stop",
                application_id=self.txn_app_id,
                epoch=self.epoch,
                current_epoch=current,
            )
        raise CommitError(f"the transaction log {self.uri} changed under epoch {self.epoch}, which should not happen")

    def _has(self, table: DeltaTable, seq: int) -> bool:
        """Whether ``table`` already holds batch ``seq`` of this sub-topology (its txn version)."""
        version = table.transaction_version(self.txn_app_id)
        return version is not None and version >= seq  # careful: version 0 is a real version

    def _append_after(self, topic: str, batch: DecidedBatch, known: log_commit.KnownVersion | None, table_for, on_published) -> bool:
        """Publish ``topic``'s files as the version after the known one; False if that was not possible."""
        if known is None or known.version < 0:
            return False
        publication = batch.tables[topic]
        version = log_commit.append_at(publication.uri, known.version, publication.files, txn_id=(self.txn_app_id, batch.seq))
        if version is None:
            return False
        if on_published is not None:
            on_published(topic, version)
        log_commit.checkpoint_if_due(version, known.checkpoint_interval, lambda: table_for(topic, publication.uri))
        return True

    def publish(
        self,
        batch: DecidedBatch,
        table_for: Callable[[str, str], DeltaTable],
        on_published: Callable[[str, int], None] | None = None,
        *,
        threads: int = 4,
        known_versions: Mapping[str, log_commit.KnownVersion] | None = None,
    ) -> None:
        """Add the batch's files to every table that does not have them yet (idempotent). Tables
        are independent once the batch is decided: they are published in parallel.

        ``known_versions``: per topic, what its only writer (the caller) knows of it; the batch then
        goes right after the version it last wrote, in one conditional write, without loading the table (a
        table found changed takes the loading path, which tells a zombie's publication of this
        same batch from an error)."""
        topics = [t for t, p in batch.tables.items() if p.files]
        if known_versions:
            topics = [t for t in topics if not self._append_after(t, batch, known_versions.get(t), table_for, on_published)]

        def publish_one(topic: str) -> None:
            publication = batch.tables[topic]
            table = table_for(topic, publication.uri)
            if self._has(table, batch.seq):
                return
            try:
                version = commit_files(
                    table, publication.files, schema=pa.schema(table.schema()), txn=(self.txn_app_id, batch.seq), exclusive=True
                )
            except CommitFailedError:
                # Someone published concurrently: a zombie finishing the same decided batch.
                table.update_incremental()
                if not self._has(table, batch.seq):
                    raise
                return
            if on_published is not None:
                on_published(topic, version)

        if len(topics) <= 1 or threads <= 1:
            for topic in topics:
                publish_one(topic)
            return
        with ThreadPoolExecutor(max_workers=min(threads, len(topics))) as pool:
            for future in [pool.submit(publish_one, t) for t in topics]:
                future.result()
