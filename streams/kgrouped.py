"""Grouped streams and their aggregations into KTables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conf.errors import TopologyError
from streams.kstream import insert_repartition
from streams.ktable import KTable
from streams.windows import TimeWindows
from topology.graph import GraphBuilder
from topology.nodes import AggregateNode, Aggregation, AggregationKind, Windows

_PREFIX = {AggregationKind.COUNT: "KSTREAM-AGGREGATE", AggregationKind.AGGREGATE: "KSTREAM-AGGREGATE", AggregationKind.REDUCE: "KSTREAM-REDUCE"}


def _callable(obj: Any, operator: str, what: str) -> Any:
    if not callable(obj):
        raise TopologyError(f"{operator}() takes a callable {what}, got {obj!r}", node=operator)
    return obj


@dataclass(frozen=True)
class _Grouped:
    _graph: GraphBuilder
    _node: str
    _repartition_required: bool
    _group_name: str | None

    def _aggregate(self, aggregation: Aggregation, windows: Windows | None, name: str | None) -> KTable:
        prefix = _PREFIX[aggregation.kind]
        # Kafka's order: the store name takes a counter value first, then the processor, then
        # the repartition nodes.
        store = name if name is not None else self._graph.store_name(prefix)
        processor = self._graph.processor_name(prefix)
        parent = self._node
        if self._repartition_required:
            repartition_prefix = self._group_name if self._group_name is not None else store
            user_named = self._group_name is not None or name is not None
            parent = insert_repartition(self._graph, parent, repartition_prefix, user_named=user_named)
        self._graph.add(AggregateNode(processor, store, aggregation, windows), [parent])
        return KTable(self._graph, processor, windows)

    def count(self, *, name: str | None = None) -> KTable:
        """Count records per key (per window, if windowed) into store ``name``."""
        return self._aggregate(Aggregation(AggregationKind.COUNT), self._windows("count"), name)

    def reduce(self, reducer: Callable[[Any, Any], Any], *, name: str | None = None) -> KTable:
        """Combine values per key: ``reducer(aggregate, value) -> aggregate`` (Kafka's order)."""
        _callable(reducer, "reduce", "reducer(aggregate, value)")
        return self._aggregate(Aggregation(AggregationKind.REDUCE, function=reducer), self._windows("reduce"), name)

    def aggregate(
        self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any], *, name: str | None = None
    ) -> KTable:
        """Fold values per key: ``aggregator(key, value, aggregate) -> aggregate``, starting from
        ``initializer()`` (Kafka's argument order)."""
        _callable(initializer, "aggregate", "initializer()")
        _callable(aggregator, "aggregate", "aggregator(key, value, aggregate)")
        aggregation = Aggregation(AggregationKind.AGGREGATE, initializer=initializer, function=aggregator)
        return self._aggregate(aggregation, self._windows("aggregate"), name)

    def _windows(self, operator: str) -> Windows | None:
        return None


class KGroupedStream(_Grouped):
    """Records grouped by key, ready to aggregate into a KTable."""

    def windowed_by(self, windows: TimeWindows) -> TimeWindowedKStream:
        """Aggregate per time window as well as per key."""
        if not isinstance(windows, TimeWindows):
            raise TopologyError(f"windowed_by() takes TimeWindows.of_size(ms)..., got {windows!r}", node="windowed_by")
        windows.spec("windowed_by")
        return TimeWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, windows)


@dataclass(frozen=True)
class TimeWindowedKStream(_Grouped):
    """A grouped stream aggregated per time window; results are keyed by (key, window)."""

    _time_windows: TimeWindows = TimeWindows()

    def _windows(self, operator: str) -> Windows:
        return self._time_windows.spec(operator)
