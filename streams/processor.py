"""The Processor API, in Kafka's shape: processors, records, their context, punctuation, and
user state stores.

    class Dedup(Processor):
        def init(self, context):
            self.context = context
            self.seen = context.get_state_store("seen-ids")
            context.schedule(60_000, PunctuationType.STREAM_TIME, self.purge)

        def process(self, record):
            if self.seen.get(record.key) is None:
                self.seen.put(record.key, record.timestamp)
                self.context.forward(record)

        def purge(self, stream_time):
            for key, seen_at in list(self.seen.all()):
                if seen_at < stream_time - 60_000:
                    self.seen.delete(key)

    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("seen-ids")))
    builder.stream("events").process(Dedup, "seen-ids").to("unique-events")

Batch processors (``KStream.process_batches``) take and return Arrow tables instead, for speed:
a record-at-a-time processor pays about a microsecond of Python per record, a batch processor
pays per batch and reads and writes its (typed) stores an array at a time:

    class BatchDedup(BatchProcessor):
        def init(self, context):
            self.seen = context.get_state_store("seen-ids")  # Stores.key_value_store_builder(..., key_type=, value_type=)
            context.schedule(60_000, PunctuationType.STREAM_TIME, self.purge)

        def process_batch(self, batch):  # columns key, value, timestamp
            first = ...  # rows whose key is new, computed with pyarrow/numpy
            self.seen.put_many(batch["key"].take(first), batch["timestamp"].take(first))
            return batch.select(["key", "value"]).take(first).append_column("input_row", first)

A processor's stores are changelogged and committed with its outputs, exactly once, as every
store here. Its lifecycle is Kafka's: ``init`` runs once, before the task's first record, and the
processor then lives as long as the task, batch after batch (on Spark, in the task's host process
on the executor that runs it), until ``close``: when the application stops, and whenever the task
starts over from its stores, as Kafka closes and re-initialises a task. That happens after a batch
that failed or was abandoned (whatever the processor did in it was not committed, so it is rebuilt
from what was), when the task moved to another machine or back, when a newer instance fenced
this one, and when the application starts. So keep what must survive those in stores (fields are
fine for caches of what the stores hold, and for handles such as the context); punctuations
scheduled in ``init`` keep firing across batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from deltastreams.conf.errors import TopologyError
from deltastreams.topology.processor_api import PunctuationType, Record

__all__ = [
    "BatchKeyValueStore",
    "BatchProcessor",
    "BatchProcessorContext",
    "Cancellable",
    "KeyValueStore",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "StoreBuilder",
    "Stores",
]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class KeyValueStore(Protocol):
    """A processor's view of a key-value store: Python keys and values."""

    name: str

    def get(self, key: Any) -> Any: ...

    def put(self, key: Any, value: Any) -> None: ...

    def put_if_absent(self, key: Any, value: Any) -> Any: ...

    def delete(self, key: Any) -> Any: ...

    def all(self) -> Iterator[tuple[Any, Any]]: ...

    def range(self, key_from: Any, key_to: Any) -> Iterator[tuple[Any, Any]]: ...

    def approximate_num_entries(self) -> int: ...


class ProcessorContext(Protocol):
    """What a processor can do besides receiving records."""

    application_id: str
    task_id: str

    def forward(self, record: Record) -> None: ...

    def get_state_store(self, name: str) -> KeyValueStore: ...

    def schedule(self, interval_ms: int, punctuation_type: PunctuationType, callback: Callable[[int], None]) -> Cancellable: ...

    def current_stream_time_ms(self) -> int: ...

    def current_system_time_ms(self) -> int: ...


class Processor:
    """Kafka's ``Processor``: override ``process`` (and ``init``/``close`` if needed)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class BatchKeyValueStore(Protocol):
    """A batch processor's view of a typed store: one call per array of keys, so a processor does
    its state work without Python per record. Keys and values are Arrow arrays (or anything
    ``pyarrow.array`` takes) of the store's declared types; a null value deletes."""

    name: str
    key_type: pa.DataType
    value_type: pa.DataType

    def get_many(self, keys: Any) -> pa.Array:
        """Each key's value, null where absent, in the keys' order."""
        ...

    def put_many(self, keys: Any, values: Any) -> None: ...

    def delete_many(self, keys: Any) -> None: ...

    def all(self) -> pa.Table:
        """Every entry as a table of ``key``, ``value``, in store order."""
        ...

    def range(self, key_from: Any, key_to: Any) -> pa.Table: ...

    def approximate_num_entries(self) -> int: ...


class BatchProcessorContext(Protocol):
    """What a batch processor can do besides returning records."""

    application_id: str
    task_id: str

    def get_state_store(self, name: str) -> BatchKeyValueStore: ...

    def schedule(self, interval_ms: int, punctuation_type: PunctuationType, callback: Callable[[int], pa.Table | None]) -> Cancellable:
        """As :meth:`ProcessorContext.schedule`; the callback may return records to emit (a table
        of ``key``, ``value``[, ``timestamp``], timestamped with the punctuation time by default)."""
        ...

    def reject(self, rows: Any, reason: str) -> None:
        """Send the records at ``rows`` (indices into the table being processed) to the
        dead-letter topic with ``reason``, as bad records (or fail the batch if so configured)."""
        ...

    def current_stream_time_ms(self) -> int: ...

    def current_system_time_ms(self) -> int: ...


class BatchProcessor:
    """A processor called with Arrow tables (``KStream.process_batches``).

    ``process_batch(batch)`` gets a ``pyarrow.Table`` of ``key``, ``value``, ``timestamp`` (and
    ``window_start``, ``window_end`` for windowed keys), in processing order, and returns the
    records to emit: a table of ``key``, ``value``, optionally ``timestamp`` (default: that of the
    input record it comes from) and ``input_row`` (the index of the input record it comes from;
    without it, every output comes from the table's last record), or None. Outputs keep input
    order downstream: they are sorted (stably) by the input row they come from.

    A batch is cut after each record at which a stream-time punctuation is due, and the
    punctuation fires between the two calls, so it sees what a record-at-a-time processor's
    punctuation would. An exception fails the whole batch (nothing is committed; it is retried on
    restart); pass known-bad records to ``context.reject`` instead.
    """

    def init(self, context: BatchProcessorContext) -> None:
        self.context = context

    def process_batch(self, batch: pa.Table) -> pa.Table | None:
        raise NotImplementedError

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class StoreSupplier:
    name: str
    persistent: bool = True


@dataclass(frozen=True)
class StoreBuilder:
    """A key-value store to register with ``StreamsBuilder.add_state_store``. Logging (a
    changelog) is always on: exactly-once rests on it. With ``key_type`` and ``value_type`` (Arrow
    types, the role of Kafka's serdes) the store is typed: batch processors read and write it an
    array at a time; without, it holds any Python objects, for record-at-a-time processors."""

    name: str
    persistent: bool = True
    key_type: pa.DataType | None = None
    value_type: pa.DataType | None = None

    @property
    def typed(self) -> bool:
        return self.key_type is not None


class Stores:
    """Kafka's ``Stores`` factory, for key-value stores."""

    @staticmethod
    def persistent_key_value_store(name: str) -> StoreSupplier:
        return StoreSupplier(_store_name(name), persistent=True)

    @staticmethod
    def in_memory_key_value_store(name: str) -> StoreSupplier:
        """Kept in RocksDB like the persistent kind (the runtime has one store engine);
        accepted for Kafka code that asks for it."""
        return StoreSupplier(_store_name(name), persistent=False)

    @staticmethod
    def key_value_store_builder(supplier: StoreSupplier, *, key_type: pa.DataType | None = None, value_type: pa.DataType | None = None) -> StoreBuilder:
        if not isinstance(supplier, StoreSupplier):
            raise TopologyError(f"Stores.key_value_store_builder takes Stores.persistent_key_value_store(name), got {supplier!r}", node="Stores")
        if (key_type is None) != (value_type is None) or not all(t is None or isinstance(t, pa.DataType) for t in (key_type, value_type)):
            raise TopologyError(f"store {supplier.name!r}: give both key_type and value_type (pyarrow types), or neither; got {key_type!r}, {value_type!r}", node="Stores")
        return StoreBuilder(supplier.name, supplier.persistent, key_type, value_type)


def _store_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise TopologyError(f"a store needs a non-empty name, got {name!r}", node="Stores")
    return name
