"""TopologyTestDriver: run a topology synchronously, without Spark or Delta, for unit tests.

It runs the very processing core the Spark runtime runs, one task per sub-topology (every topic
has one partition), committing after every input record as Kafka's TopologyTestDriver does
(``pipe_batch`` commits once for several records, to see record caching at work). Records written
to a repartition topic are processed by the downstream sub-topology once the batch that wrote them
has committed: after ``pipe_input`` one at a time, each committed on its own, the topic whose
next record has the smallest timestamp first (Kafka's driver, whose task takes its queued
partitions in that order); after ``pipe_batch`` as one batch per topic.

Stores follow the production lifecycle: a batch's writes stay pending; at commit, its changelog
entries are appended to the changelogs the driver keeps, the pending writes are discarded, and the
stores advance by applying those committed entries. ``restart()`` rebuilds every store from its
changelog, like a task moving to a new machine.

>>> from deltastreams.streams import StreamsBuilder, TopologyTestDriver
>>> builder = StreamsBuilder()
>>> builder.stream("words").group_by_key().count().to_stream().to("counts")
>>> driver = TopologyTestDriver(builder.build())
>>> driver.pipe_input("words", "a", "x", timestamp=1)
>>> driver.pipe_input("words", "a", "y", timestamp=2)
>>> [(r.key, r.value) for r in driver.read_output("counts")]
[('a', 1), ('a', 2)]
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltastreams.conf import BadRecordPolicy, StreamsConfig
from deltastreams.conf.errors import TopologyError
from deltastreams.state import (
    ChangeLoggingStore,
    ChangelogEntry,
    InMemoryKeyValueStore,
    ReadOnlyKeyValueStore,
    ReadOnlyWindowStore,
    RocksDBKeyValueStore,
    TimeKeyedStore,
)
from deltastreams.streams._internal.processing.task import TaskProcessor
from deltastreams.streams._internal.runtime.collector import collect
from deltastreams.streams._internal.runtime.idle import IdleClock, keeps_time
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import ProcessNode
from deltastreams.topology.records import HEADERS, headers_array, headers_of

_TEST_APPLICATION = "test-application"


@dataclass(frozen=True)
class TestRecord:
    """An output record. Windowed keys: ``key`` is the record key, plus the window bounds."""

    __test__ = False  # not a pytest test class

    key: Any
    value: Any
    timestamp: int
    window_start: int | None = None
    window_end: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


class TopologyTestDriver:
    """Drive a built topology record by record. ``config``: a StreamsConfig or a mapping of
    settings (``caching``, ``on_bad_record``, ``late_records_topic``...)."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig | Mapping[str, Any] | None = None,
        *,
        store_backend: str = "memory",
    ) -> None:
        if isinstance(config, StreamsConfig):
            self.config = config
        else:
            self.config = StreamsConfig.load({"application_id": _TEST_APPLICATION, **dict(config or {})})
        if store_backend not in ("memory", "rocksdb"):
            raise ValueError(f"store_backend is 'memory' or 'rocksdb', got {store_backend!r}")
        self.topology = topology
        self._backend = store_backend
        self._state_dir = tempfile.mkdtemp(prefix="deltastreams-ttd-") if store_backend == "rocksdb" else None
        if self._state_dir:  # a driver never closed (a test's, as Kafka's often are) leaves no directory behind
            weakref.finalize(self, shutil.rmtree, self._state_dir, ignore_errors=True)
        self._changelogs: dict[str, list[ChangelogEntry]] = {name: [] for name in topology.stores}
        self._outputs: dict[str, list[TestRecord]] = {}
        self._offsets: dict[str, int] = {}
        self._internal: dict[str, list[pa.Table]] = {}
        """Records written to repartition topics, not processed yet, per topic in order."""
        self._one_at_a_time = False
        self._draining = False
        self.dropped_records = 0
        self.wall_clock_ms = 0
        self._open_tasks()
        self._idle_clock = None
        if self.config.idle_close_ms is not None:
            keeping = [sub.id for sub in topology.subtopologies if keeps_time(topology, sub)]
            self._idle_clock = IdleClock(self.config.idle_close_ms, keeping, self.wall_clock_ms)

    # -- lifecycle ----------------------------------------------------------------------------

    def _open_store(self, name: str) -> ChangeLoggingStore:
        if self._backend == "rocksdb":
            return ChangeLoggingStore(RocksDBKeyValueStore(name, f"{self._state_dir}/{name}"))
        return ChangeLoggingStore(InMemoryKeyValueStore(name))

    def _open_tasks(self) -> None:
        self._stores = {name: self._open_store(name) for name in self.topology.stores}
        self._tasks = [
            TaskProcessor(
                self.topology,
                sub,
                0,
                {name: self._stores[name] for name in sub.stores},
                caching=self.config.caching,
                fail_on_bad_record=self.config.on_bad_record is BadRecordPolicy.FAIL,
                late_records_topic=self.config.late_records_topic,
                application_id=self.config.application_id,
                wall_clock_ms=self.wall_clock_ms,
                idle_close=self.config.idle_close_ms is not None,
            )
            for sub in self.topology.subtopologies
        ]

    def restart(self) -> None:
        """Throw the stores away and rebuild them from their changelogs, as after a crash."""
        self._close_stores(destroy=True)
        self._open_tasks()
        for name, entries in self._changelogs.items():
            self._stores[name].restore(entries)

    def _close_stores(self, destroy: bool) -> None:
        for store in self._stores.values():
            store.close()
        if destroy and self._state_dir:
            shutil.rmtree(self._state_dir, ignore_errors=True)

    def close(self) -> None:
        for task in self._tasks:
            task.close()
        self._close_stores(destroy=True)

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- input --------------------------------------------------------------------------------

    def advance_wall_clock(self, millis: int) -> None:
        """Move the driver's clock (Kafka's ``advanceWallClockTime``): the default timestamp of
        piped records, and the time wall-clock punctuations see (those due fire now, as in
        Kafka's driver). With ``idle_close_ms`` set, tasks idle long enough for that to close
        something get their idle advance now, as the Spark runtime would run them."""
        self.wall_clock_ms += millis
        due = self._idle_clock.due(self.wall_clock_ms) if self._idle_clock is not None else {}
        for task in self._tasks:
            if task.subtopology.id in due:
                self._run(task, {}, idle_advance_ms=due[task.subtopology.id])
            elif any(isinstance(self.topology.nodes[n], ProcessNode) for n in task.subtopology.nodes):
                self._run(task, {})

    def pipe_input(self, topic: str, key: Any, value: Any, timestamp: int | None = None, *, headers: Iterable[tuple[str, bytes]] | None = None) -> None:
        """One record, one commit; ``headers``: Kafka's record headers, ``(key, bytes)`` pairs."""
        self._check_source(topic)
        stamp = self.wall_clock_ms if timestamp is None else timestamp
        header_column = headers_array([list(headers)]) if headers is not None else None
        self._one_at_a_time = True
        try:
            self._deliver(topic, self._records(topic, pa.array([key]), pa.array([value]), [stamp], headers=header_column))
        finally:
            self._one_at_a_time = False

    def pipe_inputs(self, topic: str, records: Iterable[tuple[Any, Any, int | None]]) -> None:
        """Several records, one commit each."""
        for key, value, timestamp in records:
            self.pipe_input(topic, key, value, timestamp)

    def pipe_batch(self, topic: str, records: Iterable[tuple[Any, Any, int | None]]) -> None:
        """Several records processed as one batch and committed once (caching keeps the last
        revision per window of the batch)."""
        rows = list(records)
        self._check_source(topic)
        stamps = [self.wall_clock_ms if ts is None else ts for _, _, ts in rows]
        self._deliver(topic, self._records(topic, pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows]), stamps))

    def _check_source(self, topic: str) -> None:
        if not any(topic in sub.source_topics for sub in self.topology.subtopologies):
            raise TopologyError(f"no source reads topic '{topic}'; sources read {list(self.topology.source_topics)}")

    def pipe_together(self, records: Iterable[tuple[str, Any, Any, int]]) -> None:
        """``(topic, key, value, timestamp)`` records of several topics processed as one batch
        (one commit): each task takes them in Kafka's PartitionGroup order (smallest head
        timestamp first), as a Spark micro-batch does."""
        by_topic: dict[str, list[tuple[Any, Any, int]]] = {}
        for topic, key, value, timestamp in records:
            by_topic.setdefault(topic, []).append((key, value, timestamp))
        batch = {
            topic: self._records(topic, pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows]), [r[2] for r in rows])
            for topic, rows in by_topic.items()
        }
        self._deliver_batch(batch)

    def _records(self, topic: str, keys: pa.Array, values: pa.Array, stamps: list[int], windows: tuple | None = None, headers: pa.Array | None = None) -> pa.Table:
        first = self._offsets.get(topic, 0)
        self._offsets[topic] = first + len(keys)
        columns = {
            "partition": pa.array([0] * len(keys), pa.int32()),
            "offset": pa.array(range(first, first + len(keys)), pa.int64()),
            "timestamp": pa.array(stamps, pa.int64()),
        }
        if windows is not None:
            columns["window_start"], columns["window_end"] = windows
        columns["key"], columns["value"] = keys, values
        if headers is not None:
            columns[HEADERS] = headers
        return pa.table(columns)

    def _deliver(self, topic: str, records: pa.Table) -> None:
        self._deliver_batch({topic: records})

    def _deliver_batch(self, batch: Mapping[str, pa.Table]) -> None:
        for task in self._tasks:
            inputs = {t: records for t, records in batch.items() if t in task.subtopology.source_topics}
            if inputs:
                self._run(task, inputs)
        if not self._draining:
            self._drain_internal()

    def _drain_internal(self) -> None:
        """Process what the committed batches wrote to repartition topics, until none is left."""
        self._draining = True
        try:
            while self._internal:
                if self._one_at_a_time:
                    topic = min(self._internal, key=lambda t: self._internal[t][0].column("timestamp")[0].as_py())
                else:
                    topic = next(iter(self._internal))
                queue = self._internal[topic]
                head = queue.pop(0)
                if not queue:
                    del self._internal[topic]
                self._deliver(topic, head)
        finally:
            self._draining = False

    def _run(self, task: TaskProcessor, inputs: Mapping[str, pa.Table], *, idle_advance_ms: int | None = None) -> None:
        wall_ms = self.wall_clock_ms
        try:
            result = task.process(inputs, wall_clock_ms=wall_ms, idle_advance_ms=idle_advance_ms)
        except Exception:
            self._abort(task)  # a failed batch commits nothing, as a failed task in production
            raise
        self.dropped_records += result.dropped_records
        changelogs = {name: name for name in result.changelogs}
        collect(result, self, dead_letter_topic=self.config.dlq_topic, changelogs=changelogs, timestamp=0)
        if self._idle_clock is not None and (result.processed or idle_advance_ms is not None):
            self._idle_clock.committed(
                task.subtopology.id, wall_ms, processed=result.processed, advanced=result.idle_advanced, next_close_ms=result.next_close_ms
            )

    def _abort(self, task: TaskProcessor) -> None:
        for name in task.subtopology.stores:
            self._stores[name].abort()

    # -- the collector (deltastreams.streams._internal.runtime.collector.Collector) --------------------------

    def send_changelog(self, topic: str, store: str, entries: list[ChangelogEntry], timestamp: int) -> None:
        """The batch's changelog entries become committed; the store discards its pending writes
        and advances only from them, as in production."""
        self._changelogs[store].extend(entries)
        self._stores[store].abort()
        self._stores[store].restore(entries)

    def send(self, topic: str, table: pa.Table) -> None:
        """A repartition topic's records are queued for the downstream sub-topology; others are
        kept for :meth:`read_output`."""
        if table.num_rows == 0:
            return
        if topic in self.topology.internal_topics:
            windows = (table.column("window_start"), table.column("window_end")) if "window_start" in table.column_names else None
            headers = table.column(HEADERS) if HEADERS in table.column_names else None
            records = self._records(topic, table.column("key"), table.column("value"), table.column("timestamp").to_pylist(), windows, headers)
            queue = self._internal.setdefault(topic, [])
            if self._one_at_a_time:
                queue.extend(records.slice(i, 1) for i in range(records.num_rows))
            else:
                queue.append(records)
        else:
            self._collect(topic, table)

    def _collect(self, topic: str, table: pa.Table) -> None:
        windowed = "window_start" in table.column_names
        keys, values, stamps = table.column("key").to_pylist(), table.column("value").to_pylist(), table.column("timestamp").to_pylist()
        starts = table.column("window_start").to_pylist() if windowed else [None] * len(keys)
        ends = table.column("window_end").to_pylist() if windowed else [None] * len(keys)
        headers = headers_of(table.column(HEADERS)) if HEADERS in table.column_names else [()] * len(keys)
        self._outputs.setdefault(topic, []).extend(
            TestRecord(k, v, t, s, e, h) for k, v, t, s, e, h in zip(keys, values, stamps, starts, ends, headers, strict=True)
        )

    # -- output and state ---------------------------------------------------------------------

    def read_output(self, topic: str) -> list[TestRecord]:
        """Records written to ``topic`` since the last read, in order."""
        return self._outputs.pop(topic, [])

    def dead_letters(self) -> list[TestRecord]:
        """Records that could not be processed, with the reason in ``value['reason']``."""
        return self.read_output(self.config.dlq_topic)

    def changelog(self, store: str) -> list[ChangelogEntry]:
        return list(self._changelogs[store])

    def _task_with(self, store: str) -> TaskProcessor:
        for task in self._tasks:
            if store in task.subtopology.stores:
                return task
        raise KeyError(f"no store named '{store}'; stores: {sorted(self.topology.stores)}")

    def get_key_value_store(self, store: str) -> ReadOnlyKeyValueStore:
        """Read access to the aggregation store ``store`` (Kafka's ``getKeyValueStore``)."""
        view = self._task_with(store).store(store)
        if not isinstance(view, ReadOnlyKeyValueStore):
            raise TypeError(f"store '{store}' is a window store: use get_window_store('{store}')")
        return view

    def get_window_store(self, store: str) -> ReadOnlyWindowStore:
        """Read access to the windowed aggregation store ``store`` (Kafka's ``getWindowStore``)."""
        view = self._task_with(store).store(store)
        if not isinstance(view, ReadOnlyWindowStore):
            raise TypeError(f"store '{store}' is not windowed: use get_key_value_store('{store}')")
        return view

    def get_session_store(self, store: str):
        """Read access to the session-windowed aggregation store ``store`` (Kafka's
        ``getSessionStore``): ``fetch(key)`` lists ``(Windowed(key, start, end), aggregate)``."""
        return self._task_with(store).store(store)

    def fetch(self, store: str, key: Any, window_start: int | None = None) -> Any:
        """The aggregate of ``key`` (in the window starting at ``window_start``), or None."""
        view = self._task_with(store).store(store)
        if isinstance(view, ReadOnlyWindowStore):
            if window_start is None:
                raise ValueError(f"store '{store}' is windowed: pass window_start")
            return view.fetch(key, window_start)
        return view.get(key)

    def store_entries(self, store: str) -> list[tuple[bytes, bytes]]:
        """Raw contents of a store, in key order (for comparing with its changelog)."""
        return list(self._stores[store].range())

    def stream_time(self, store: str) -> int:
        return TimeKeyedStore(self._stores[store]).stream_time
