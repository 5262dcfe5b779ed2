"""StreamsBuilder: where a topology starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from deltastreams.conf.errors import TopologyError
from deltastreams.sinks.formats import ValueFormat, check_value_format
from deltastreams.streams.dsl import GlobalKTable, KStream, KTable, _named
from deltastreams.streams.processor import StoreBuilder
from deltastreams.topology.graph import GraphBuilder, Topology
from deltastreams.topology.nodes import SourceNode, TableSourceNode


class StreamsBuilder:
    """Builds a topology with the DSL; ``build()`` returns the immutable :class:`Topology`."""

    def __init__(self) -> None:
        self._graph = GraphBuilder()

    def stream(
        self,
        topics: str | list[str],
        *,
        key_type: pa.DataType | None = None,
        value_type: pa.DataType | None = None,
        name: str | None = None,
        timestamp_extractor: Callable[[Any, Any, int], int] | None = None,
        value_format: ValueFormat | None = None,
    ) -> KStream:
        """The records of one or more topics (each partition read in offset order).

        ``key_type``/``value_type`` declare what the topology expects (Kafka's ``Consumed``
        serdes); a topic whose columns differ stops the application at start, naming the column.
        ``timestamp_extractor(key, value, record_timestamp) -> int`` gives each record its event
        time (Kafka's ``Consumed.withTimestampExtractor``); one that raises or returns a negative
        or non-integer time sends the record to the dead-letter topic. ``value_format``
        (:class:`AvroFormat`, :class:`JsonFormat`; Kafka's value serde): the topic's values are
        bytes in that format, decoded into the format's struct before anything else sees them; a
        record that does not decode goes to the dead-letter topic (docs/formats.md)."""
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise TopologyError(f"stream() takes a topic name or a list of them, got {topics!r}", node="stream")
        if timestamp_extractor is not None and not callable(timestamp_extractor):
            raise TopologyError(f"stream(): timestamp_extractor is a function (key, value, timestamp) -> int, got {timestamp_extractor!r}", node="stream")
        node = SourceNode(
            _named(self._graph, name, "KSTREAM-SOURCE"),
            tuple(names),
            key_type=key_type,
            value_type=_encoded_type(value_type, value_format, "stream"),
            timestamp_extractor=timestamp_extractor,
            value_format=value_format,
        )
        return KStream(self._graph, self._graph.add(node))

    def table(
        self,
        topic: str,
        *,
        key_type: pa.DataType | None = None,
        value_type: pa.DataType | None = None,
        name: str | None = None,
        value_format: ValueFormat | None = None,
    ) -> KTable:
        """The latest value per key of ``topic`` (a ``None`` value deletes the key; a ``None``
        key is skipped). ``name`` names the table's store (Kafka's ``Materialized.as``), which
        is then always kept; otherwise a store is kept only if something reads the table by key.
        ``value_format``: as for :meth:`stream`."""
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"table() takes a topic name, got {topic!r}", node="table")
        # Kafka's counter order: the store's name, the source, then the table source.
        store = name if name is not None else self._graph.store_name(topic)
        value_type = _encoded_type(value_type, value_format, "table")
        source = self._graph.add(
            SourceNode(self._graph.processor_name("KSTREAM-SOURCE"), (topic,), key_type=key_type, value_type=value_type, value_format=value_format)
        )
        node = TableSourceNode(self._graph.processor_name("KTABLE-SOURCE"), store, store=store if name is not None else None)
        return KTable(self._graph, self._graph.add(node, [source]), _source=node.name)

    def global_table(
        self,
        topic: str,
        *,
        key_type: pa.DataType | None = None,
        value_type: pa.DataType | None = None,
        name: str | None = None,
        value_format: ValueFormat | None = None,
    ) -> GlobalKTable:
        """The whole of ``topic`` as a table in every task that joins it, whatever its partitions
        (no co-partitioning needed). Each batch applies the table's new records before any stream
        record looks it up, as Kafka reads a global table before the stream side. ``name`` names
        its store. ``value_format``: as for :meth:`stream`."""
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"global_table() takes a topic name, got {topic!r}", node="global_table")
        store = name if name is not None else self._graph.store_name(topic)
        value_type = _encoded_type(value_type, value_format, "global_table")
        source = SourceNode(
            self._graph.processor_name("KSTREAM-SOURCE"), (topic,), key_type=key_type, value_type=value_type, is_global=True, value_format=value_format
        )
        self._graph.add(source)
        node = TableSourceNode(self._graph.processor_name("KTABLE-SOURCE"), store, store=store)
        return GlobalKTable(self._graph, self._graph.add(node, [source.name]), store)

    def add_state_store(self, store_builder: StoreBuilder) -> StreamsBuilder:
        """Register a user store (``Stores.key_value_store_builder(...)``) for processors to
        connect to by name (``process(supplier, "name")``)."""
        if not isinstance(store_builder, StoreBuilder):
            raise TopologyError(f"add_state_store() takes Stores.key_value_store_builder(...), got {store_builder!r}", node="add_state_store")
        if store_builder.name in self._graph.user_stores:
            raise TopologyError(f"a store named '{store_builder.name}' is already registered", node="add_state_store")
        self._graph.user_stores[store_builder.name] = store_builder
        return self

    def build(self) -> Topology:
        return self._graph.build()


def _encoded_type(value_type: pa.DataType | None, value_format: ValueFormat | None, operator: str) -> pa.DataType | None:
    """The value type a source expects of its topic: with a format, the topic holds bytes (the
    decoded type is the format's, so declaring both is a contradiction)."""
    if value_format is None:
        return value_type
    check_value_format(value_format, operator)
    if value_type is not None:
        raise TopologyError(
            f"{operator}(): give value_format or value_type, not both: with a format the topic holds bytes and values decode to "
            f"the format's type ({value_format.value_type})",
            node=operator,
        )
    return None
