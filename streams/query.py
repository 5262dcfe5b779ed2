"""Queries of a store's committed state, from any process, the application running or not
(beyond Kafka's interactive queries, which read one instance's local, possibly uncommitted
state through an RPC layer the user writes).

    q = StoreQuery("/data/pv", "pageview", "counts")         # as of the last committed batch
    q.fetch("category-04", 0, 2**62)                          # window store: [(window_start, count), ...]
    q.get("user-1"); q.range("a", "m"); q.all()               # key-value stores
    q.batch                                                   # the batch the answers are as of
    StoreQuery(root, app, store, as_of_batch=7).all()         # the state batch 7 committed
    q.to_spark(spark)                                         # the same snapshot as a DataFrame

What is read is what a restore reads (:mod:`deltastreams.state.task_stores`): the store's changelog
topic at one Delta version, every partition in offset order, tombstones deleting. A changelog row
counts only once its batch is committed: the last batch decided in the sub-topology's transaction
log (docs/exactly-once.md) may not be published yet (the instance died between its decision and
its publication, or is publishing now); its changelog files, named by the decision, are applied
on top, as the roll-forward at the next start will publish them. So the snapshot is always one
committed batch, the same for every partition.

Served from memory: the first call loads the snapshot into a dict (a 1M-key store: about a
second, ``python -m deltastreams.devtools.bench.query``); later calls probe the transaction log for a
newer decision (one file-existence check) and, if there is one, read only the changelog files
committed since. Point lookups then cost microseconds. ``as_of_batch`` snapshots are fixed.

Typed keys and values without the topology: a store's key type is the key type of the topics its
sub-topology reads (a grouping re-keys through a repartition topic, so the aggregation's key is
that topic's key), or the one the store remembers (emit-final aggregations keep it); values are
decoded as the operators write them (counts as ``(count, timestamp)``, other aggregates and table
rows pickled ``(value, timestamp)``, session aggregates pickled). The store's kind (key-value,
window, session) is read from its bookkeeping entries. Stores of other operators (joins,
suppression buffers, processors' own stores) are returned with the same rules, undecoded values
as bytes.
"""

from __future__ import annotations

import json
import pickle
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake.exceptions import DeltaError

from deltastreams.conf.errors import DeltaStreamsError, StoreQueryError
from deltastreams.sinks import Topic, filesystem_for, latest_version, open_table, read_commit, table_exists, topic_uri, under_root, use_storage_options
from deltastreams.sinks.serde import array_from_key_bytes, key_bytes_of
from deltastreams.sinks.transaction import DecidedBatch, decided_entry, log_property
from deltastreams.state.snapshot import ChangelogSnapshot
from deltastreams.streams._internal.runtime.topology_guard import TOPOLOGY_PROPERTY

_COUNT = struct.Struct(">qq")
_TIME = struct.Struct(">q")
_ORDERED_TIME = struct.Struct(">Q")
_KEY_TYPE_KEY = b"\xff\xffkey-type"
_SESSION_MARK = b"\xff\xffobserved-stream-time"
_STREAM_TIME_KEY = b"\xff\xffstream-time"
_FAR = 2**62


class StoreKind(Enum):
    KEY_VALUE = "key-value"
    WINDOW = "window"
    SESSION = "session"


@dataclass(frozen=True)
class StoreLocation:
    """Where a store's committed state is: its changelog and its sub-topology's transaction log."""

    application_id: str
    store: str
    subtopology: int
    changelog_uri: str
    log_uri: str
    key_type: pa.DataType | None
    """The key type of the topics the sub-topology reads (None: they disagree or are not Delta topics)."""

    @property
    def txn_app_id(self) -> str:
        return f"{self.application_id}/subtopology-{self.subtopology}"


def _listing(uri: str) -> list[str]:
    filesystem, path = filesystem_for(uri)
    entries = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(e.base_name for e in entries if e.type == pafs.FileType.Directory)


def applications(root: str) -> list[str]:
    """The application ids with transaction logs under ``root``."""
    return _listing(under_root(root, "transactions"))


def application_stores(root: str, application_id: str) -> dict[str, int]:
    """Store name -> sub-topology, as each sub-topology's transaction log records its topology."""
    _require_application(root, application_id)
    stores: dict[str, int] = {}
    for record in _records(root, application_id).values():
        stores.update(dict.fromkeys(record["stores"], record["subtopology"]))
    return stores


def _records(root: str, application_id: str) -> dict[int, dict]:
    """Each sub-topology's recorded topology (``deltastreams.topology``, set with its decisions)."""
    records = {}
    for name in _listing(under_root(root, "transactions", application_id)):
        if name.startswith("subtopology-"):
            raw = log_property(under_root(root, "transactions", application_id, name), TOPOLOGY_PROPERTY)
            if raw is not None:
                record = json.loads(raw)
                records[int(record["subtopology"])] = record
    return records


def _require_application(root: str, application_id: str, store: str = "") -> None:
    apps = applications(root)
    if application_id not in apps:
        raise StoreQueryError(
            f"no application '{application_id}' under {root} (no transaction log at {under_root(root, 'transactions', application_id)}); "
            f"applications there: {apps or 'none (nothing ever ran under this root)'}",
            store=store,
        )


def locate_store(root: str, application_id: str, store: str) -> StoreLocation:
    """Find ``store`` of ``application_id`` under ``root``, or say what is there."""
    _require_application(root, application_id, store)
    records = _records(root, application_id)
    record = next((r for r in records.values() if store in r["stores"]), None)
    if record is None:
        known = sorted(s for r in records.values() for s in r["stores"])
        raise StoreQueryError(
            f"application '{application_id}' has no store '{store}'; its stores: {known or 'none committed yet (run it first)'}",
            store=store,
        )
    internal = set(record["internal_topics"])
    key_types = set()
    for topic in record["source_topics"]:
        physical = f"{application_id}-{topic}" if topic in internal else topic
        try:
            key_types.add(Topic.open(root, physical).layout.key_type)
        except DeltaStreamsError:  # a Kafka-sourced topic: not under the root
            key_types.add(None)
    sub = int(record["subtopology"])
    return StoreLocation(
        application_id=application_id,
        store=store,
        subtopology=sub,
        changelog_uri=topic_uri(root, f"{application_id}-{store}-changelog"),
        log_uri=under_root(root, "transactions", application_id, f"subtopology-{sub}"),
        key_type=key_types.pop() if len(key_types) == 1 else None,
    )


def last_decided(log_uri: str) -> tuple[int, DecidedBatch | None]:
    """``(log version, last decided batch)`` of a transaction log, read-only."""
    version = open_table(log_uri).version()
    for v in range(version, 0, -1):
        actions = read_commit(log_uri, v)
        if actions is None:
            break
        batch = decided_entry(actions)
        if batch is not None:
            return version, batch
    return version, None


class StoreQuery:
    """Typed reads of one store's committed state (see the module docstring).

    ``as_of_batch``: the state a given batch of the store's sub-topology committed, instead of
    the latest (kept fixed). ``key_type``: the Arrow type of the store's keys, where it cannot
    be found (keys are raw bytes then). ``window_size_ms``: adds ``window_end`` to window rows.
    ``max_staleness_s``: how long a read may use the snapshot without checking for a newer
    committed batch (0: every read checks, one file probe)."""

    def __init__(
        self,
        root: str,
        application_id: str,
        store: str,
        *,
        as_of_batch: int | None = None,
        key_type: pa.DataType | None = None,
        window_size_ms: int | None = None,
        storage_options: dict[str, str] | None = None,
        max_staleness_s: float = 0.0,
    ) -> None:
        if storage_options is not None:
            use_storage_options(storage_options)
        self.root = str(root)
        self.location = locate_store(self.root, application_id, store)
        self.store = store
        self.as_of_batch = as_of_batch
        self.window_size_ms = window_size_ms
        self.max_staleness_s = max_staleness_s
        self._key_type = key_type
        self._checked = 0.0
        self._log_version = -1
        self._batch: DecidedBatch | None = None
        self._snapshot: ChangelogSnapshot | None = None
        self._by_key: dict[bytes, set[int]] = {}
        """Window store: the window starts of each key, so a fetch reads its key's windows only."""
        self._by_key_generation = -1
        self._load()

    # -- the snapshot ---------------------------------------------------------------------------

    def _load(self) -> None:
        loc = self.location
        self._log_version, last = last_decided(loc.log_uri)
        if last is None:
            raise StoreQueryError(
                f"application '{loc.application_id}' has committed no batch of sub-topology {loc.subtopology} "
                f"(store '{self.store}') yet: run it first",
                store=self.store,
            )
        if not table_exists(loc.changelog_uri):
            raise StoreQueryError(f"store '{self.store}' has no changelog at {loc.changelog_uri} (deleted by a reset?)", store=self.store)
        target = self.as_of_batch
        if target is not None and not 0 <= target <= last.seq:
            raise StoreQueryError(
                f"batch {target} of sub-topology {loc.subtopology} is not committed: committed batches of store "
                f"'{self.store}' are 0..{last.seq}",
                store=self.store,
            )
        if target is None or target == last.seq:
            self._snapshot = ChangelogSnapshot.load(loc.changelog_uri)
            self._apply_decided(last)
        else:
            if not last.exactly_once:
                raise StoreQueryError(
                    f"as_of_batch needs exactly_once: sub-topology {loc.subtopology} commits at_least_once, whose changelog "
                    "publications carry no batch numbers; query the latest state",
                    store=self.store,
                )
            self._snapshot = self._load_as_of(target)
        self._batch = last if target is None else DecidedBatch(target, last.epoch, {})
        self._checked = time.monotonic()

    def _apply_decided(self, batch: DecidedBatch) -> None:
        """A decided batch's changelog files (published or not: already applied entries are skipped)."""
        for publication in batch.tables.values():
            if publication.uri.rstrip("/") == self.location.changelog_uri.rstrip("/"):
                self._snapshot.apply_files(publication.files)

    def _load_as_of(self, target: int) -> ChangelogSnapshot:
        """The changelog at its newest version published by a batch ``<= target``."""
        loc = self.location
        uri = loc.changelog_uri
        version = open_table(uri).version()
        found = 0
        for v in range(version, 0, -1):
            actions = read_commit(uri, v)
            if actions is None:
                raise StoreQueryError(
                    f"batch {target} of store '{self.store}' is older than its changelog's retained history (commit "
                    f"{v} of {uri} was removed by log retention, retention.log_keep_versions)",
                    store=self.store,
                )
            txn = next((a["txn"] for a in actions if "txn" in a and a["txn"].get("appId") == loc.txn_app_id), None)
            if txn is not None and int(txn["version"]) <= target:
                found = v
                break
        try:
            return ChangelogSnapshot.load(uri, found)
        except (DeltaError, OSError) as e:
            raise StoreQueryError(
                f"batch {target} of store '{self.store}' can no longer be read: files of changelog version {found} were "
                f"cleaned up by retention ({e})",
                store=self.store,
            ) from None

    def refresh(self) -> bool:
        """Move to the last committed batch if a newer one was decided; returns whether it moved."""
        self._checked = time.monotonic()
        if self.as_of_batch is not None:
            return False
        loc = self.location
        if latest_version(loc.log_uri, self._log_version) == self._log_version:
            return False
        self._log_version, last = last_decided(loc.log_uri)
        if last is None or (self._batch is not None and last.seq == self._batch.seq):
            return False
        self._snapshot.refresh()
        self._apply_decided(last)
        self._batch = last
        return True

    def _current(self) -> ChangelogSnapshot:
        if time.monotonic() - self._checked >= self.max_staleness_s:
            self.refresh()
        return self._snapshot

    @property
    def batch(self) -> int:
        """The batch of the store's sub-topology the answers are as of."""
        self._current()
        return self._batch.seq

    @property
    def kind(self) -> StoreKind:
        snapshot = self._current()
        if snapshot.get(_SESSION_MARK) is not None:
            return StoreKind.SESSION
        if snapshot.get(_STREAM_TIME_KEY) is not None:
            return StoreKind.WINDOW
        return StoreKind.KEY_VALUE

    @property
    def key_type(self) -> pa.DataType:
        if self._key_type is None:
            raw = self._snapshot.get(_KEY_TYPE_KEY)
            if raw is not None:
                self._key_type = pa.ipc.read_schema(pa.py_buffer(raw)).field("key").type
            else:
                self._key_type = self.location.key_type or pa.binary()
        return self._key_type

    def raw(self) -> dict[bytes, bytes]:
        """The store's entries as the job's own store holds them (key bytes -> value bytes,
        bookkeeping entries included): for checks against a task's RocksDB store."""
        return dict(self._current().entries)

    # -- keys and values -------------------------------------------------------------------------

    def _key(self, key: Any) -> bytes:
        key_type = self.key_type
        if isinstance(key, str) and pa.types.is_string(key_type):  # the common cases, without an Arrow array per lookup
            return key.encode()
        if isinstance(key, int) and not isinstance(key, bool) and pa.types.is_int64(key_type) and -(2**63) <= key < 2**63:
            return _TIME.pack(key)
        try:
            return key_bytes_of(key, self.key_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            raise StoreQueryError(
                f"key {key!r} ({type(key).__name__}) is not a key of store '{self.store}', whose keys are {self.key_type}",
                store=self.store,
            ) from None

    def _keys(self, raws: list[bytes]) -> list[Any]:
        return array_from_key_bytes(raws, self.key_type).to_pylist()

    def _require(self, *kinds: StoreKind, method: str) -> StoreKind:
        kind = self.kind
        if kind not in kinds:
            offered = {StoreKind.KEY_VALUE: "get, range, all", StoreKind.WINDOW: "fetch, all", StoreKind.SESSION: "fetch, all"}[kind]
            raise StoreQueryError(f"store '{self.store}' is a {kind.value} store: it has {offered}, not {method}", store=self.store)
        return kind

    # -- reads: Kafka's ReadOnlyKeyValueStore, ReadOnlyWindowStore, ReadOnlySessionStore ---------

    def get(self, key: Any) -> Any:
        """The value of ``key`` (key-value store), or None."""
        self._require(StoreKind.KEY_VALUE, method="get")
        raw = self._snapshot.get(self._key(key))
        return None if raw is None else decode_value(raw)[0]

    def range(self, from_key: Any = None, to_key: Any = None) -> list[tuple[Any, Any]]:
        """``(key, value)`` with ``from_key <= key <= to_key`` (None: unbounded), in the key
        bytes' order (Kafka's range, inclusive both ends)."""
        self._require(StoreKind.KEY_VALUE, method="range")
        return [(row[0], row[-2]) for row in self._kv_rows(from_key, to_key)]

    def all(self) -> list[tuple]:
        """Every entry: ``(key, value)``; ``(key, window_start, value)`` for a window store;
        ``(key, session_start, session_end, value)`` for a session store."""
        return [row[:-1] for row in self.rows()]

    def fetch(self, key: Any, time_from: int = -_FAR, time_to: int = _FAR) -> list[tuple]:
        """Window store: ``(window_start, value)`` of ``key``'s windows starting in
        ``[time_from, time_to]``. Session store: ``(session_start, session_end, value)`` of
        ``key``'s sessions overlapping ``[time_from, time_to]`` (Kafka's findSessions)."""
        kind = self._require(StoreKind.WINDOW, StoreKind.SESSION, method="fetch")
        if kind is StoreKind.WINDOW:
            return [(row[1], row[-2]) for row in self._window_rows(key, time_from, time_to)]
        return [(row[1], row[2], row[-2]) for row in self._session_rows(key, time_from, time_to)]

    def rows(
        self, key: Any = None, time_from: int | None = None, time_to: int | None = None, *, from_key: Any = None, to_key: Any = None
    ) -> list[tuple]:
        """The rows of :meth:`table`: every entry (or ``key``'s, or a key-value store's keys from
        ``from_key`` to ``to_key``), each ending with value and timestamp."""
        kind = self.kind
        if kind is StoreKind.KEY_VALUE:
            if time_from is not None or time_to is not None:
                raise StoreQueryError(f"store '{self.store}' is a key-value store: its entries have no time to select by", store=self.store)
            return list(self._kv_rows(from_key, to_key)) if key is None else list(self._kv_rows(key, key))
        if from_key is not None or to_key is not None:
            raise StoreQueryError(f"store '{self.store}' is a {kind.value} store: select one key, not a key range", store=self.store)
        lo, hi = (-_FAR if time_from is None else time_from), (_FAR if time_to is None else time_to)
        if kind is StoreKind.WINDOW:
            return list(self._window_rows(key, lo, hi))
        return list(self._session_rows(key, lo, hi))

    def table(
        self, key: Any = None, time_from: int | None = None, time_to: int | None = None, *, from_key: Any = None, to_key: Any = None
    ) -> pa.Table:
        """The entries as an Arrow table: ``key``, then ``window_start`` (and ``window_end``
        given the window size) or ``session_start``, ``session_end``, then ``value``, ``timestamp``
        (the record time of the last update; null where the store keeps none)."""
        rows = self.rows(key, time_from, time_to, from_key=from_key, to_key=to_key)
        kind = self.kind
        names = ["key"]
        if kind is StoreKind.WINDOW:
            names += ["window_start"] + (["window_end"] if self.window_size_ms else [])
            if self.window_size_ms:
                rows = [(r[0], r[1], r[1] + self.window_size_ms, *r[2:]) for r in rows]
        elif kind is StoreKind.SESSION:
            names += ["session_start", "session_end"]
        names += ["value", "timestamp"]
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
        arrays = []
        for name, values in zip(names, columns, strict=True):
            if name == "key":
                arrays.append(pa.array(list(values), self.key_type))
            elif name == "value":
                arrays.append(_value_array(list(values)))
            else:
                arrays.append(pa.array(list(values), pa.int64()))
        return pa.table(arrays, names=names)

    def to_spark(self, spark, key: Any = None, time_from: int | None = None, time_to: int | None = None, *, from_key: Any = None, to_key: Any = None):
        """The same snapshot as a Spark DataFrame (columns of :meth:`table`), for a ``SparkSession``."""
        table = self.table(key, time_from, time_to, from_key=from_key, to_key=to_key)
        if table.num_rows == 0:
            from pyspark.sql.pandas.types import from_arrow_schema

            return spark.createDataFrame([], from_arrow_schema(table.schema))
        return spark.createDataFrame(table)

    # -- scans ----------------------------------------------------------------------------------

    def _kv_rows(self, from_key: Any, to_key: Any) -> Iterator[tuple]:
        snapshot = self._current()
        lo = None if from_key is None else self._key(from_key)
        hi = None if to_key is None else self._key(to_key) + b"\x00"  # inclusive
        found = [(k, v) for k, v in snapshot.range(lo, hi) if k != _KEY_TYPE_KEY]
        keys = self._keys([k for k, _ in found])
        for key, (_, raw) in zip(keys, found, strict=True):
            yield (key, *decode_value(raw))

    def _window_rows(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple]:
        snapshot = self._current()
        if time_to < 0 or time_to < time_from:  # window starts are never negative
            return
        if key is None:
            # Keys are the big-endian window start, then the key: one time range, bookkeeping (0xff..) past it.
            found = list(snapshot.range(_TIME.pack(max(time_from, 0)), _TIME.pack(min(time_to, _FAR) + 1)))
        else:
            suffix = self._key(key)
            starts = sorted(t for t in self._window_index(snapshot).get(suffix, ()) if time_from <= t <= time_to)
            found = [(_TIME.pack(t) + suffix, snapshot.get(_TIME.pack(t) + suffix)) for t in starts]
        keys = self._keys([k[8:] for k, _ in found])
        for key_value, (raw_key, raw) in zip(keys, found, strict=True):
            yield (key_value, _TIME.unpack_from(raw_key)[0], *decode_value(raw))

    def _window_index(self, snapshot: ChangelogSnapshot) -> dict[bytes, set[int]]:
        """Window starts by key: built once, then updated with the keys each refresh changed."""
        if self._by_key_generation != snapshot.generation:
            if self._by_key_generation == snapshot.generation - 1:
                changed = snapshot.changed
            else:
                self._by_key = {}
                changed = list(snapshot.entries)
            for raw_key in changed:
                if raw_key[:1] >= b"\x80" or len(raw_key) < 8:  # bookkeeping
                    continue
                start, suffix = _TIME.unpack_from(raw_key)[0], raw_key[8:]
                if raw_key in snapshot.entries:
                    self._by_key.setdefault(suffix, set()).add(start)
                elif suffix in self._by_key:
                    self._by_key[suffix].discard(start)
            self._by_key_generation = snapshot.generation
        return self._by_key

    def _session_rows(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple]:
        snapshot = self._current()
        if key is None:
            lo, hi = b"k", b"l"
        else:
            kb = self._key(key)
            lo = b"k" + struct.pack(">I", len(kb)) + kb
            hi = lo + b"\xff" * 17
        found = []
        for raw_key, raw in snapshot.range(lo, hi):
            n = 5 + struct.unpack_from(">I", raw_key, 1)[0]
            end = _ORDERED_TIME.unpack_from(raw_key, n)[0] - 2**63
            start = _ORDERED_TIME.unpack_from(raw_key, n + 8)[0] - 2**63
            if end >= time_from and start <= time_to:
                found.append((raw_key[5:n], start, end, raw))
        keys = self._keys([f[0] for f in found])
        for key_value, (_, start, end, raw) in zip(keys, found, strict=True):
            yield (key_value, start, end, decode_value(raw, timestamped=False)[0], None)


def decode_value(raw: bytes, *, timestamped: bool = True) -> tuple[Any, int | None]:
    """``(value, timestamp)`` of a stored value, as the operators encode them: a count is two
    big-endian longs, anything else a pickle of ``(value, timestamp)`` (a session aggregate: of
    the value alone); other bytes are returned as they are."""
    if raw[:1] == b"\x80":
        try:
            obj = pickle.loads(raw)
        except Exception:  # noqa: BLE001 - not a pickle after all: bytes as they are
            return raw, None
        if timestamped and isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], int):
            return obj[0], obj[1]
        return obj, None
    if timestamped and len(raw) == _COUNT.size:
        count, stamp = _COUNT.unpack(raw)
        return count, stamp
    return raw, None


def _value_array(values: list[Any]) -> pa.Array:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # mixed or opaque values: their text
        return pa.array([None if v is None else repr(v) for v in values], pa.string())
