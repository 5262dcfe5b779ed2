"""KStream: a record stream. Each method adds a node and returns a new handle; nothing runs here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conf.errors import TopologyError
from topology.functions import FunctionKind, user_function
from topology.graph import GraphBuilder
from topology.nodes import (
    FilterNode,
    FlatMapNode,
    MapNode,
    MapValuesNode,
    NullKeyFilterNode,
    PeekNode,
    SelectKeyNode,
    SinkNode,
    SourceNode,
)

if TYPE_CHECKING:
    from streams.kgrouped import KGroupedStream

_GENERATED = "KSTREAM"


def insert_repartition(graph: GraphBuilder, parent: str, prefix: str, user_named: bool) -> str:
    """Kafka's repartition: null-key filter -> sink ``<prefix>-repartition`` | source of it.
    Returns the source node name; the topic is a sub-topology boundary."""
    topic = prefix if prefix.endswith("-repartition") else f"{prefix}-repartition"
    # Kafka always burns three counter values here, named or not, to keep later names stable.
    generated_sink = graph.processor_name("KSTREAM-SINK")
    generated_filter = graph.processor_name("KSTREAM-FILTER")
    generated_source = graph.processor_name("KSTREAM-SOURCE")
    if user_named:
        sink, key_filter, source = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"
    else:
        sink, key_filter, source = generated_sink, generated_filter, generated_source
    graph.add(NullKeyFilterNode(key_filter), [parent])
    graph.add(SinkNode(sink, topic, internal=True), [key_filter])
    return graph.add(SourceNode(source, (topic,), internal=True))


@dataclass(frozen=True)
class KStream:
    """A stream of key-value records."""

    _graph: GraphBuilder
    _node: str
    _repartition_required: bool = False
    _windowed: bool = False
    """Keys are windowed (the stream of a windowed KTable)."""

    def _then(self, node, *, changes_key: bool = False, windowed: bool | None = None) -> KStream:
        name = self._graph.add(node, [self._node])
        return KStream(
            self._graph,
            name,
            self._repartition_required or changes_key,
            self._windowed if windowed is None else windowed,
        )

    def _name(self, name: str | None, prefix: str) -> str:
        return name if name is not None else self._graph.processor_name(prefix)

    # -- stateless --------------------------------------------------------------------------

    def filter(self, predicate: Callable[[Any, Any], bool] | Any, *, name: str | None = None) -> KStream:
        """Keep records for which ``predicate(key, value)`` is true (or a boolean Column)."""
        fn = user_function(predicate, operator="filter")
        return self._then(FilterNode(self._name(name, "KSTREAM-FILTER"), fn))

    def filter_not(self, predicate: Callable[[Any, Any], bool] | Any, *, name: str | None = None) -> KStream:
        """Drop records for which ``predicate(key, value)`` is true."""
        fn = user_function(predicate, operator="filter_not")
        return self._then(FilterNode(self._name(name, "KSTREAM-FILTER"), fn, negate=True))

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]] | Any, *, name: str | None = None) -> KStream:
        """New key and value: ``mapper(key, value) -> (key, value)``, or a pair of Columns.
        Changes the key, so a later grouping repartitions."""
        fn = user_function(mapper, operator="map", columns=2)
        return self._then(MapNode(self._name(name, "KSTREAM-MAP"), fn), changes_key=True, windowed=False)

    def map_values(self, mapper: Callable[..., Any] | Any, *, name: str | None = None) -> KStream:
        """New value: ``mapper(key, value)`` or ``mapper(value)``, or a Column. Keeps the key."""
        fn = user_function(mapper, operator="map_values", value_only_allowed=True)
        return self._then(MapValuesNode(self._name(name, "KSTREAM-MAPVALUES"), fn))

    def flat_map(self, mapper: Callable[[Any, Any], Any], *, name: str | None = None) -> KStream:
        """Zero or more records per record: ``mapper(key, value) -> iterable of (key, value)``."""
        fn = user_function(mapper, operator="flat_map")
        if fn.kind is not FunctionKind.PYTHON:
            raise TopologyError("flat_map() takes a Python callable; expressions are not supported", node="flat_map")
        return self._then(FlatMapNode(self._name(name, "KSTREAM-FLATMAP"), fn), changes_key=True, windowed=False)

    def select_key(self, mapper: Callable[[Any, Any], Any] | Any, *, name: str | None = None) -> KStream:
        """New key: ``mapper(key, value)`` or a Column. Changes the key."""
        fn = user_function(mapper, operator="select_key")
        return self._then(SelectKeyNode(self._name(name, "KSTREAM-KEY-SELECT"), fn), changes_key=True, windowed=False)

    def peek(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> KStream:
        """Call ``action(key, value)`` for every record (side effects only)."""
        fn = user_function(action, operator="peek")
        if fn.kind is not FunctionKind.PYTHON:
            raise TopologyError("peek() takes a Python callable", node="peek")
        return self._then(PeekNode(self._name(name, "KSTREAM-PEEK"), fn))

    # -- repartitioning and grouping ----------------------------------------------------------

    def repartition(self, *, name: str | None = None) -> KStream:
        """Route records through a repartition topic (by their current key): a sub-topology
        boundary. The topic is ``<application_id>-<name>-repartition``."""
        prefix = name if name is not None else self._graph.processor_name("KSTREAM-REPARTITION")
        source = insert_repartition(self._graph, self._node, prefix, user_named=name is not None)
        return KStream(self._graph, source, False, False)

    def group_by_key(self, *, name: str | None = None) -> KGroupedStream:
        """Group by the current key. If an earlier step changed the key, aggregating inserts a
        repartition topic named after ``name`` (else after the store)."""
        from streams.kgrouped import KGroupedStream

        return KGroupedStream(self._graph, self._node, self._repartition_required, name)

    def group_by(self, selector: Callable[[Any, Any], Any] | Any, *, name: str | None = None) -> KGroupedStream:
        """Group by a new key ``selector(key, value)``: ``select_key`` then ``group_by_key``."""
        return self.select_key(selector, name=name).group_by_key(name=name)

    # -- sinks --------------------------------------------------------------------------------

    def to(
        self,
        topic: str,
        *,
        key_column: str = "key",
        value_column: str = "value",
        name: str | None = None,
    ) -> None:
        """Write to ``topic``. If the application creates it, the key goes to column
        ``key_column``, a scalar value to ``value_column`` (struct values: one column per field)."""
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"to() takes a topic name, got {topic!r}", node="to")
        node = SinkNode(self._name(name, "KSTREAM-SINK"), topic, key_column=key_column, value_column=value_column)
        self._graph.add(node, [self._node])

    # -- misuse -------------------------------------------------------------------------------

    def _needs_grouping(self, operator: str) -> TopologyError:
        return TopologyError(
            f"{operator}() aggregates a grouped stream: call group_by_key() or group_by(...) first", node=operator
        )

    def count(self, *args: Any, **kwargs: Any) -> Any:
        raise self._needs_grouping("count")

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        raise self._needs_grouping("reduce")

    def aggregate(self, *args: Any, **kwargs: Any) -> Any:
        raise self._needs_grouping("aggregate")

    def windowed_by(self, *args: Any, **kwargs: Any) -> Any:
        raise self._needs_grouping("windowed_by")
