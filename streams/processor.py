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

A processor's stores are changelogged and committed with its outputs, exactly once, as every
store here. ``init`` runs before a task's first record and ``close`` after its last; on Spark a
task's processors live for one micro-batch (keep what must last in stores, as exactly-once
needs anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from conf.errors import TopologyError
from topology.processor_api import PunctuationType, Record

__all__ = ["Cancellable", "KeyValueStore", "Processor", "ProcessorContext", "PunctuationType", "Record", "StoreBuilder", "Stores"]


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


@dataclass(frozen=True)
class StoreSupplier:
    name: str
    persistent: bool = True


@dataclass(frozen=True)
class StoreBuilder:
    """A key-value store to register with ``StreamsBuilder.add_state_store``. Logging (a
    changelog) is always on: exactly-once rests on it."""

    name: str
    persistent: bool = True


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
    def key_value_store_builder(supplier: StoreSupplier) -> StoreBuilder:
        if not isinstance(supplier, StoreSupplier):
            raise TopologyError(f"Stores.key_value_store_builder takes Stores.persistent_key_value_store(name), got {supplier!r}", node="Stores")
        return StoreBuilder(supplier.name, supplier.persistent)


def _store_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise TopologyError(f"a store needs a non-empty name, got {name!r}", node="Stores")
    return name
