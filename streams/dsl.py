"""The DSL's handles: KStream, KGroupedStream, TimeWindowedKStream, KTable and GlobalKTable.

Each method adds nodes to the graph and returns a new, immutable handle; nothing runs here. The
handles refer to one another (a stream groups into a grouped stream, which aggregates into a
table, whose changes are a stream), which is why they share this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deltastreams.conf.errors import TopologyError
from deltastreams.sinks.formats import ValueFormat, check_value_format
from deltastreams.streams.options import Branched, Printed
from deltastreams.streams.windows import EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows
from deltastreams.topology.functions import FunctionKind, check_callable, joiner_function, user_function
from deltastreams.topology.foreign_key_nodes import add_foreign_key_join
from deltastreams.topology.graph import GraphBuilder
from deltastreams.topology.nodes import (
    AggregateNode,
    BatchProcessNode,
    Aggregation,
    AggregationKind,
    BranchChildNode,
    BranchNode,
    CogroupAggregateNode,
    CogroupMergeNode,
    FilterNode,
    FlatMapNode,
    FlatMapValuesNode,
    ForeachNode,
    MapNode,
    MergeNode,
    MapValuesNode,
    PeekNode,
    PrintNode,
    ProcessNode,
    SelectKeyNode,
    SessionAggregateNode,
    SinkNode,
    SlidingAggregateNode,
    JoinKind,
    StreamGlobalTableJoinNode,
    StreamJoinWindowNode,
    StreamStreamJoinNode,
    StreamTableJoinNode,
    SuppressNode,
    TableFilterNode,
    TableMapValuesNode,
    TableAggregateNode,
    TableMergeNode,
    TableSelectNode,
    TableSourceNode,
    TableTableJoinNode,
    ToStreamNode,
    Windows,
)
from deltastreams.topology.windowed_keys import KeyKind, key_kind

_AGGREGATE_PREFIX = {
    AggregationKind.COUNT: "KSTREAM-AGGREGATE",
    AggregationKind.AGGREGATE: "KSTREAM-AGGREGATE",
    AggregationKind.REDUCE: "KSTREAM-REDUCE",
}


def _named(graph: GraphBuilder, name: str | None, prefix: str) -> str:
    """The user's name, or a generated one. Kafka takes a counter value either way, so naming
    one operator does not rename the unnamed ones after it."""
    generated = graph.processor_name(prefix)
    return name if name is not None else generated


def _same_key_kind(operator: str, graph: GraphBuilder, this: str, other: str) -> None:
    """Refuse a join by key of two kinds of key, as Kafka's types do (``Windowed<K>`` is not
    ``K``), and a join reading a session or sliding window's table (read by key nowhere)."""
    this_kind, other_kind = key_kind(graph, this), key_kind(graph, other)
    if KeyKind.SESSION_WINDOWED in (this_kind, other_kind):
        raise TopologyError(
            f"{operator}: a session- or sliding-windowed table cannot be joined by key here (only time-windowed "
            "tables can); join the tables' to_stream() with JoinWindows instead",
            node=operator,
        )
    if this_kind is not other_kind:
        raise TopologyError(
            f"{operator}: both sides must have the same kind of key, got {this_kind.value} and {other_kind.value}; "
            "a windowed table joins another windowed table (same key, same window) or a stream of its to_stream(); "
            "to join a windowed result with a plain table, re-key it first, e.g. "
            "table.to_stream().select_key(lambda wk, v: wk.key)",
            node=operator,
        )


@dataclass(frozen=True)
class KStream:
    """A stream of key-value records."""

    _graph: GraphBuilder
    _node: str
    _repartition_required: bool = False
    """An earlier step changed the key: aggregating must repartition first."""

    def _then(self, node, *, changes_key: bool = False) -> KStream:
        return KStream(self._graph, self._graph.add(node, [self._node]), self._repartition_required or changes_key)

    def _name(self, name: str | None, prefix: str) -> str:
        return _named(self._graph, name, prefix)

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
        return self._then(MapNode(self._name(name, "KSTREAM-MAP"), fn), changes_key=True)

    def map_values(self, mapper: Callable[..., Any] | Any, *, name: str | None = None) -> KStream:
        """New value: ``mapper(value)`` (Kafka's ValueMapper; built-ins such as ``str`` or ``len``
        too) or ``mapper(key, value)``, or a Column. Keeps the key."""
        fn = user_function(mapper, operator="map_values", value_only_allowed=True)
        return self._then(MapValuesNode(self._name(name, "KSTREAM-MAPVALUES"), fn))

    def flat_map(self, mapper: Callable[[Any, Any], Any], *, name: str | None = None) -> KStream:
        """Zero or more records per record: ``mapper(key, value) -> iterable of (key, value)``."""
        fn = user_function(mapper, operator="flat_map")
        if fn.kind is not FunctionKind.PYTHON:
            raise TopologyError("flat_map() takes a Python callable; expressions are not supported", node="flat_map")
        return self._then(FlatMapNode(self._name(name, "KSTREAM-FLATMAP"), fn), changes_key=True)

    def select_key(self, mapper: Callable[[Any, Any], Any] | Any, *, name: str | None = None) -> KStream:
        """New key: ``mapper(key, value)`` or a Column. Changes the key."""
        fn = user_function(mapper, operator="select_key")
        return self._then(SelectKeyNode(self._name(name, "KSTREAM-KEY-SELECT"), fn), changes_key=True)

    def flat_map_values(self, mapper: Callable[..., Any], *, name: str | None = None) -> KStream:
        """Zero or more values per record, each keeping the key: ``mapper(value)`` or
        ``mapper(key, value)`` returns an iterable of values."""
        fn = user_function(mapper, operator="flat_map_values", value_only_allowed=True)
        if fn.kind is not FunctionKind.PYTHON:
            raise TopologyError("flat_map_values() takes a Python callable; expressions are not supported", node="flat_map_values")
        return self._then(FlatMapValuesNode(self._name(name, "KSTREAM-FLATMAPVALUES"), fn))

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """The records of both streams, in the task's order (both read in one sub-topology). A
        later grouping repartitions if either stream's key had changed."""
        if not isinstance(other, KStream) or other._graph is not self._graph:
            raise TopologyError(f"merge() takes another KStream of the same StreamsBuilder, got {other!r}", node="merge")
        node = self._graph.add(MergeNode(self._name(name, "KSTREAM-MERGE")), [self._node, other._node])
        return KStream(self._graph, node, self._repartition_required or other._repartition_required)

    def split(self, *, name: str | None = None) -> BranchedKStream:
        """Route each record to the first branch whose predicate holds:
        ``split(name="p-").branch(pred, Branched.with_name("a")).default_branch()`` returns
        ``{"p-a": KStream, "p-0": KStream}`` (unnamed branches are named by position from 1, the
        default branch ``0``, after the split's name, which defaults to the processor's)."""
        splitter = self._name(name, "KSTREAM-BRANCH")
        self._graph.add(BranchNode(splitter), [self._node])
        return BranchedKStream(self, splitter)

    def foreach(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for every record (a terminal step)."""
        fn = user_function(action, operator="foreach")
        if fn.kind is not FunctionKind.PYTHON:
            raise TopologyError("foreach() takes a Python callable", node="foreach")
        self._graph.add(ForeachNode(self._name(name, "KSTREAM-FOREACH"), fn), [self._node])

    def print(self, printed: Printed | None = None) -> None:
        """Print every record, ``[label]: key, value``: ``Printed.to_sysout()`` (the default) or
        ``Printed.to_file(path)``, ``.with_label(...)``, ``.with_key_value_mapper(...)``."""
        printed = printed if printed is not None else Printed.to_sysout()
        if not isinstance(printed, Printed):
            raise TopologyError(f"print() takes Printed.to_sysout() or Printed.to_file(path), got {printed!r}", node="print")
        processor = self._name(printed.name, "KSTREAM-PRINTER")
        mapper = user_function(printed.mapper, operator="print") if printed.mapper is not None else None
        self._graph.add(PrintNode(processor, printed.label if printed.label is not None else processor, mapper, printed.path), [self._node])

    def process(self, supplier: Callable[[], Any], *store_names: str, name: str | None = None) -> KStream:
        """Run a user :class:`deltastreams.streams.processor.Processor` made by ``supplier()`` (a Processor
        class, or a function returning one) on every record; it forwards records with
        ``context.forward`` and may use the stores ``store_names`` (registered with
        ``StreamsBuilder.add_state_store``). Its forwarded keys may differ from the input's, so a
        later grouping repartitions."""
        return self._process(supplier, store_names, name, fixed_key=False)

    def process_values(self, supplier: Callable[[], Any], *store_names: str, name: str | None = None) -> KStream:
        """Like :meth:`process`, but every forwarded record keeps the key of the record being
        processed (Kafka's FixedKeyProcessor): no repartition needed downstream."""
        return self._process(supplier, store_names, name, fixed_key=True)

    def _process(self, supplier: Callable[[], Any], store_names: tuple[str, ...], name: str | None, *, fixed_key: bool) -> KStream:
        operator = "process_values" if fixed_key else "process"
        if not callable(supplier):
            raise TopologyError(f"{operator}() takes a Processor class or a function returning a Processor, got {supplier!r}", node=operator)
        missing = [s for s in store_names if s not in self._graph.user_stores]
        if missing:
            raise TopologyError(f"{operator}(): no store named {missing[0]!r}; register it first with StreamsBuilder.add_state_store(...)", node=operator)
        typed = [s for s in store_names if self._graph.user_stores[s].typed]
        if typed:
            raise TopologyError(f"{operator}(): store {typed[0]!r} is typed (key_type/value_type), for process_batches(); register one without types for a Processor", node=operator)
        # A named processor takes no counter value here (Kafka's process(supplier, Named, ...)
        # uses the name as it is), unlike most named operators.
        processor = name if name is not None else self._graph.processor_name("KSTREAM-PROCESSVALUES" if fixed_key else "KSTREAM-PROCESSOR")
        node = ProcessNode(processor, supplier, tuple(store_names), f"{processor}-schedules", fixed_key)
        return self._then(node, changes_key=not fixed_key)

    def process_batches(self, supplier: Callable[[], Any], *store_names: str, name: str | None = None) -> KStream:
        """Run a user :class:`deltastreams.streams.processor.BatchProcessor` made by ``supplier()`` on Arrow
        tables of records instead of one record at a time, for speed (see its docstring for the
        columns, the output order and punctuation). Its stores must be typed
        (``Stores.key_value_store_builder(supplier, key_type=..., value_type=...)``) so it can
        read and write them an array at a time. Its output keys may differ from the input's, so a
        later grouping repartitions."""
        if not callable(supplier):
            raise TopologyError(f"process_batches() takes a BatchProcessor class or a function returning one, got {supplier!r}", node="process_batches")
        missing = [s for s in store_names if s not in self._graph.user_stores]
        if missing:
            raise TopologyError(f"process_batches(): no store named {missing[0]!r}; register it first with StreamsBuilder.add_state_store(...)", node="process_batches")
        builders = [self._graph.user_stores[s] for s in store_names]
        untyped = [b.name for b in builders if not b.typed]
        if untyped:
            raise TopologyError(
                f"process_batches(): store {untyped[0]!r} has no types; register it with "
                "Stores.key_value_store_builder(supplier, key_type=..., value_type=...) (pyarrow types)",
                node="process_batches",
            )
        processor = name if name is not None else self._graph.processor_name("KSTREAM-PROCESSOR")  # as process()
        types = tuple((b.name, b.key_type, b.value_type) for b in builders)
        node = BatchProcessNode(processor, supplier, tuple(store_names), f"{processor}-schedules", False, types)
        return self._then(node, changes_key=True)

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
        source = self._graph.add_repartition(self._node, prefix)
        return KStream(self._graph, source)

    def group_by_key(self, *, name: str | None = None) -> KGroupedStream:
        """Group by the current key. If an earlier step changed the key, aggregating inserts a
        repartition topic named after ``name`` (else after the store)."""
        return KGroupedStream(self._graph, self._node, self._repartition_required, name)

    def group_by(self, selector: Callable[[Any, Any], Any] | Any, *, name: str | None = None) -> KGroupedStream:
        """Group by a new key ``selector(key, value)``: ``select_key`` then ``group_by_key``."""
        return self.select_key(selector, name=name).group_by_key(name=name)

    # -- tables and joins ---------------------------------------------------------------------

    def to_table(self, *, name: str | None = None) -> KTable:
        """This stream as a table: the latest value per key (a ``None`` value deletes the key).
        If an earlier step changed the key, the records are repartitioned first."""
        processor = self._name(name, "KSTREAM-TOTABLE")
        store = self._graph.store_name("KSTREAM-TOTABLE")
        parent = self._node
        if self._repartition_required:
            parent = self._graph.add_repartition(parent, processor)
        node = self._graph.add(TableSourceNode(processor, store), [parent])
        return KTable(self._graph, node, _source=node)

    def join(self, other: KTable | KStream | GlobalKTable, joiner: Callable[..., Any], windows: JoinWindows | Callable[..., Any] | None = None, *, name: str | None = None, store_name: str | None = None) -> KStream:
        """Inner join by key.

        With a KTable: each record with a matching row gives ``joiner(value, table_value)`` (or
        ``joiner(key, value, table_value)``), keyed and timed as the record; a record without a
        row gives nothing; table updates give nothing.

        With a KStream and ``JoinWindows``: each pair of records with the same key whose
        timestamps are within the window gives ``joiner(value, other_value)``, timed as the later
        of the two. ``store_name`` names the two window stores (``<store_name>-this-join-store``,
        ``...-other-join-store``), as Kafka's ``StreamJoined.withStoreName``.

        With a GlobalKTable, ``join(global_table, key_selector, joiner)``: each record looks up
        ``key_selector(key, value)`` in the table (no repartition, no co-partitioning); a record
        whose selected key is None or has no row gives nothing."""
        if isinstance(other, KStream):
            return self._join_stream(other, joiner, windows, name, store_name, JoinKind.INNER)
        if isinstance(other, GlobalKTable):
            return self._join_global(other, joiner, windows, name, left=False)
        self._no_windows_for_table("join", windows, store_name)
        return self._join_table(other, joiner, name, left=False)

    def left_join(self, other: KTable | KStream | GlobalKTable, joiner: Callable[..., Any], windows: JoinWindows | Callable[..., Any] | None = None, *, name: str | None = None, store_name: str | None = None) -> KStream:
        """Like :meth:`join`, but a record without a partner still gives ``joiner(value, None)``:
        at once with a table or a global table; with a stream, once its window has closed (window end plus grace, by stream time), and only if no
        partner arrived by then (no spurious results)."""
        if isinstance(other, KStream):
            return self._join_stream(other, joiner, windows, name, store_name, JoinKind.LEFT)
        if isinstance(other, GlobalKTable):
            return self._join_global(other, joiner, windows, name, left=True)
        self._no_windows_for_table("left_join", windows, store_name)
        return self._join_table(other, joiner, name, left=True)

    def outer_join(self, other: KStream, joiner: Callable[..., Any], windows: JoinWindows, *, name: str | None = None, store_name: str | None = None) -> KStream:
        """Like :meth:`left_join` with a stream, for both sides: a record of either stream
        without a partner gives ``joiner(value, None)`` or ``joiner(None, other_value)`` once its
        window has closed."""
        if not isinstance(other, KStream):
            raise TopologyError(f"outer_join() joins another KStream (tables join tables with KTable.outer_join), got {other!r}", node="outer_join")
        return self._join_stream(other, joiner, windows, name, store_name, JoinKind.OUTER)

    def _join_global(self, table: GlobalKTable, key_selector: Callable[[Any, Any], Any], joiner: Any, name: str | None, *, left: bool) -> KStream:
        operator = "left_join" if left else "join"
        check_callable(key_selector, operator=operator, what="key_selector(key, value)", arguments=2)
        selector = user_function(key_selector, operator=operator)
        if selector.is_column:
            raise TopologyError(f"{operator}(global_table, key_selector, joiner): the key selector is a Python callable", node=operator)
        fn = joiner_function(joiner, operator=operator)
        # Kafka names both global-table joins KSTREAM-LEFTJOIN (KStreamImpl.globalTableJoin).
        processor = self._name(name, "KSTREAM-LEFTJOIN")
        node = StreamGlobalTableJoinNode(processor, selector, fn, table._node, table._store, left)
        return KStream(self._graph, self._graph.add(node, [self._node]))

    @staticmethod
    def _no_windows_for_table(operator: str, windows: Any, store_name: str | None) -> None:
        if windows is not None or store_name is not None:
            raise TopologyError(f"{operator}(): a stream-table join takes no JoinWindows or store_name (they are for joining two streams)", node=operator)

    def _join_stream(
        self, other: KStream, joiner: Callable[..., Any], windows: JoinWindows | None, name: str | None, store_name: str | None, kind: JoinKind
    ) -> KStream:
        operator = {JoinKind.INNER: "join", JoinKind.LEFT: "left_join", JoinKind.OUTER: "outer_join"}[kind]
        if not isinstance(windows, JoinWindows):
            raise TopologyError(
                f"{operator}() of two streams needs JoinWindows, e.g. JoinWindows.of_time_difference_and_grace(60_000, 10_000), got {windows!r}",
                node=operator,
            )
        if other._graph is not self._graph:
            raise TopologyError(f"{operator}(): both streams must come from the same StreamsBuilder", node=operator)
        spec = windows.spec()
        fn = joiner_function(joiner, operator=operator)
        graph, this_node, other_node = self._graph, self._node, other._node
        if self._repartition_required:
            this_node = graph.repartition_for_join(this_node, f"{name}-left" if name is not None else this_node, user_named=name is not None)
        if other._repartition_required:
            other_node = graph.repartition_for_join(other_node, f"{name}-right" if name is not None else other_node, user_named=name is not None)
        left_outer, right_outer = kind is not JoinKind.INNER, kind is JoinKind.OUTER
        # Kafka's counter order: both windowed nodes, this side, the other side, the merge.
        # A name does not spare the counter values (Kafka's NamedInternal.suffixWithOrElseGet).
        this_windowed = _named(graph, None if name is None else f"{name}-this-windowed", "KSTREAM-WINDOWED")
        other_windowed = _named(graph, None if name is None else f"{name}-other-windowed", "KSTREAM-WINDOWED")
        this_generated = graph.processor_name("KSTREAM-OUTERTHIS" if right_outer else "KSTREAM-JOINTHIS")
        other_generated = graph.processor_name("KSTREAM-OUTEROTHER" if left_outer else "KSTREAM-JOINOTHER")
        this_suffix = "-outer-this-join" if right_outer else "-this-join"
        other_suffix = "-outer-other-join" if left_outer else "-other-join"
        this_join = f"{name}{this_suffix}" if name is not None else this_generated
        other_join = f"{name}{other_suffix}" if name is not None else other_generated
        merge = _named(graph, None if name is None else f"{name}-merge", "KSTREAM-MERGE")
        this_store = f"{store_name}{this_suffix}-store" if store_name is not None else f"{this_generated}-store"
        other_store = f"{store_name}{other_suffix}-store" if store_name is not None else f"{other_generated}-store"
        outer_store = None
        if left_outer:
            shared_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
            generated_shared = "KSTREAM-OUTERSHARED-" + this_generated.rsplit("-", 1)[1]
            outer_store = f"{store_name}{shared_suffix}-store" if store_name is not None else f"{generated_shared}-store"
        graph.add(StreamJoinWindowNode(this_windowed, this_store), [this_node])
        graph.add(StreamJoinWindowNode(other_windowed, other_store), [other_node])
        graph.add(StreamStreamJoinNode(this_join, fn, this_store, other_store, outer_store, spec, kind, this_is_left=True), [this_windowed])
        graph.add(StreamStreamJoinNode(other_join, fn, other_store, this_store, outer_store, spec, kind, this_is_left=False), [other_windowed])
        return KStream(self._graph, graph.add(MergeNode(merge), [this_join, other_join]))

    def _join_table(self, table: KTable, joiner: Callable[..., Any], name: str | None, *, left: bool) -> KStream:
        operator = "left_join" if left else "join"
        if not isinstance(table, KTable):
            raise TopologyError(f"{operator}() joins a KTable (builder.table(...) or to_table()), got {table!r}", node=operator)
        fn = joiner_function(joiner, operator=operator)
        _same_key_kind(f"KStream.{operator}(table)", self._graph, self._node, table._node)
        parent = self._node
        if self._repartition_required:
            parent = self._graph.repartition_for_join(parent, name if name is not None else self._node, user_named=name is not None)
        processor = self._name(name, "KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN")
        store = table._materialize()
        return KStream(self._graph, self._graph.add(StreamTableJoinNode(processor, fn, table._node, store, left), [parent]))

    # -- sinks --------------------------------------------------------------------------------

    def to(
        self,
        topic: str | Callable[[Any, Any], str],
        *,
        topics: list[str] | tuple[str, ...] | None = None,
        key_column: str = "key",
        value_column: str = "value",
        name: str | None = None,
        value_format: ValueFormat | None = None,
    ) -> None:
        """Write to ``topic``; or, with a function ``topic(key, value) -> name`` (Kafka's
        TopicNameExtractor), to the topic it names per record, one of ``topics`` (declared up
        front; a record naming another goes to the dead-letter topic). If the application creates
        a topic, the key goes to column ``key_column``, a scalar value to ``value_column`` (struct
        values: one column per field). ``value_format`` (:class:`AvroFormat`, :class:`JsonFormat`;
        Kafka's ``Produced`` value serde): values are written as bytes in that format, in
        ``value_column``; a value that does not fit goes to the dead-letter topic."""
        processor = self._name(name, "KSTREAM-SINK")
        if value_format is not None:
            check_value_format(value_format, "to")
        if callable(topic) and not isinstance(topic, str):
            if not topics or not all(isinstance(t, str) and t for t in topics):
                raise TopologyError("to(extractor, topics=[...]): declare the topics the extractor may choose", node="to")
            fn = user_function(topic, operator="to")
            if fn.kind is not FunctionKind.PYTHON:
                raise TopologyError("to(): a topic extractor is a Python callable (key, value) -> topic", node="to")
            node = SinkNode(
                processor, "", key_column=key_column, value_column=value_column, extractor=fn, extracted_topics=tuple(dict.fromkeys(topics)), value_format=value_format
            )
        else:
            if not isinstance(topic, str) or not topic:
                raise TopologyError(f"to() takes a topic name or a function choosing one, got {topic!r}", node="to")
            node = SinkNode(processor, topic, key_column=key_column, value_column=value_column, value_format=value_format)
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


class BranchedKStream:
    """The branches of ``KStream.split()``, added one by one (Kafka's BranchedKStream)."""

    def __init__(self, stream: KStream, splitter: str) -> None:
        self._stream = stream
        self._splitter = splitter
        self._branches: dict[str, KStream] = {}
        self._closed = False

    def branch(self, predicate: Callable[[Any, Any], bool], branched: Branched | None = None) -> BranchedKStream:
        """Records not taken by an earlier branch for which ``predicate(key, value)`` holds."""
        fn = user_function(predicate, operator="branch")
        if fn.kind is not FunctionKind.PYTHON:
            raise TopologyError("branch() takes a Python callable predicate(key, value)", node="branch")
        node = self._node()
        self._graph.replace(BranchNode(node.name, (*node.predicates, fn), node.branches))
        self._add(branched, len(node.predicates) + 1)  # Kafka names branches by position from 1
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, KStream]:
        """Records no predicate took; returns the map of branches."""
        self._add(branched, 0)
        self._closed = True
        return dict(self._branches)

    def no_default_branch(self) -> dict[str, KStream]:
        """Records no predicate took are dropped; returns the map of branches."""
        self._closed = True
        return dict(self._branches)

    @property
    def _graph(self) -> GraphBuilder:
        return self._stream._graph

    def _node(self) -> BranchNode:
        if self._closed:
            raise TopologyError("split(): no branch can follow default_branch() or no_default_branch()", node=self._splitter)
        return self._graph.node(self._splitter)

    def _add(self, branched: Branched | None, index: int) -> None:
        branched = branched if branched is not None else Branched()
        if not isinstance(branched, Branched):
            raise TopologyError(f"branch() takes Branched.with_name(...) / with_function / with_consumer, got {branched!r}", node="branch")
        node = self._node()
        child = f"{self._splitter}{branched.name if branched.name is not None else index}"
        self._graph.processor_name(child)  # Kafka takes a counter value for every branch
        position = len(node.branches)
        self._graph.replace(BranchNode(node.name, node.predicates, (*node.branches, child)))
        self._graph.add(BranchChildNode(child, self._splitter, position), [self._splitter])
        stream = KStream(self._graph, child, self._stream._repartition_required)
        if branched.function is not None:
            result = branched.function(stream)
            if result is not None:
                self._branches[child] = result
        elif branched.consumer is not None:
            branched.consumer(stream)
        else:
            self._branches[child] = stream


@dataclass(frozen=True)
class _Grouped:
    _graph: GraphBuilder
    _node: str
    _repartition_required: bool
    _group_name: str | None

    def _aggregate(self, aggregation: Aggregation, windows: Windows | None, name: str | None, sessions: SessionWindows | SlidingWindows | None = None, merger: Any = None, *, emit_final: bool = False) -> KTable:
        prefix = _AGGREGATE_PREFIX[aggregation.kind]
        # Kafka's order: the store name takes a counter value first, then the processor, then
        # the repartition nodes.
        store = name if name is not None else self._graph.store_name(prefix)
        processor = self._graph.processor_name(prefix)
        parent = self._node
        if self._repartition_required:
            repartition_prefix = self._group_name if self._group_name is not None else store
            parent = self._graph.add_repartition(parent, repartition_prefix)
        self._graph.add(_aggregation_node(processor, store, aggregation, windows, sessions, merger, emit_final), [parent])
        return KTable(self._graph, processor, windows, _sessions=sessions)

    def count(self, *, name: str | None = None) -> KTable:
        """Count records per key (per window, if windowed) into store ``name``. Records with a
        null value are skipped and counted as dropped, as in Kafka."""
        return self._aggregate(Aggregation(AggregationKind.COUNT), self._windows("count"), name)

    def reduce(self, reducer: Callable[[Any, Any], Any], *, name: str | None = None) -> KTable:
        """Combine values per key: ``reducer(aggregate, value) -> aggregate`` (Kafka's order).
        Records with a null value are skipped and counted as dropped, as in Kafka."""
        check_callable(reducer, operator="reduce", what="reducer(aggregate, value)", arguments=2)
        return self._aggregate(Aggregation(AggregationKind.REDUCE, function=reducer), self._windows("reduce"), name)

    def aggregate(
        self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any], *, name: str | None = None
    ) -> KTable:
        """Fold values per key: ``aggregator(key, value, aggregate) -> aggregate``, starting from
        ``initializer()`` (Kafka's argument order). Records with a null value are skipped and
        counted as dropped, as in Kafka."""
        check_callable(initializer, operator="aggregate", what="initializer()", arguments=0)
        check_callable(aggregator, operator="aggregate", what="aggregator(key, value, aggregate)", arguments=3)
        aggregation = Aggregation(AggregationKind.AGGREGATE, initializer=initializer, function=aggregator)
        return self._aggregate(aggregation, self._windows("aggregate"), name)

    def _windows(self, operator: str) -> Windows | None:
        return None


def _aggregation_node(
    processor: str, store: str, aggregation: Aggregation, windows: Windows | None, sessions: SessionWindows | SlidingWindows | None, merger: Any, emit_final: bool
) -> AggregateNode | SessionAggregateNode | SlidingAggregateNode:
    """The node aggregating per key: per time window (``windows``), per session or over sliding
    windows (``sessions``), or not windowed."""
    if isinstance(sessions, SlidingWindows):
        return SlidingAggregateNode(processor, store, aggregation, sessions.difference_ms, sessions.grace_ms, emit_final)
    if sessions is not None:
        return SessionAggregateNode(processor, store, aggregation, sessions.spec(), merger, emit_final)
    return AggregateNode(processor, store, aggregation, windows, emit_final)


class KGroupedStream(_Grouped):
    """Records grouped by key, ready to aggregate into a KTable."""

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Start a cogroup (Kafka's ``cogroup``): this stream's records are folded with
        ``aggregator(key, value, aggregate)``; add other grouped streams, each with its own
        aggregator, with :meth:`CogroupedKStream.cogroup`, then ``aggregate(initializer)`` them
        all into one table."""
        check_callable(aggregator, operator="cogroup", what="aggregator(key, value, aggregate)", arguments=3)
        return CogroupedKStream(self._graph, ((self, aggregator),))

    def windowed_by(self, windows: TimeWindows | SessionWindows) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregate per time window (``TimeWindows``) or per session (``SessionWindows``) as
        well as per key."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, windows)
        if not isinstance(windows, TimeWindows):
            raise TopologyError(f"windowed_by() takes TimeWindows.of_size(ms)... or SessionWindows..., got {windows!r}", node="windowed_by")
        windows.spec("windowed_by")
        return TimeWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, windows)


_COGROUP_AGGREGATE = "COGROUPKSTREAM-AGGREGATE"


@dataclass(frozen=True)
class CogroupedKStream:
    """Grouped streams with the same key, each with its own aggregator, to be aggregated into one
    table (Kafka's CogroupedKStream): from ``KGroupedStream.cogroup(aggregator)``. The inputs'
    records are folded into one store in the task's record order; a record with a null value is
    skipped and counted as dropped. An input whose key was changed is repartitioned on its own
    (named after its grouping's name, else after the store)."""

    _graph: GraphBuilder
    _inputs: tuple[tuple[KGroupedStream, Callable[..., Any]], ...]
    _repartitions: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    """Each input's repartition source, by ``id`` of its grouped stream, once made. Kafka's
    cogroup is one mutable object whose aggregations all reuse an input's repartition; the
    handles derived from one cogroup share this map to do the same."""

    def cogroup(self, grouped: KGroupedStream, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Add ``grouped``, folded with ``aggregator(key, value, aggregate)``. Cogrouping a
        grouped stream again replaces its aggregator (Kafka keeps one per grouped stream)."""
        if not isinstance(grouped, KGroupedStream) or grouped._graph is not self._graph:
            raise TopologyError(f"cogroup() takes a KGroupedStream of the same StreamsBuilder, got {grouped!r}", node="cogroup")
        check_callable(aggregator, operator="cogroup", what="aggregator(key, value, aggregate)", arguments=3)
        inputs = [(g, aggregator if g is grouped else a) for g, a in self._inputs]
        if not any(g is grouped for g, _ in self._inputs):
            inputs.append((grouped, aggregator))
        return CogroupedKStream(self._graph, tuple(inputs), self._repartitions)

    def aggregate(self, initializer: Callable[[], Any], *, name: str | None = None, processor_name: str | None = None) -> KTable:
        """One table of every input's records, each folded by its input's aggregator, starting
        from ``initializer()``. ``name`` names the store (Kafka's ``Materialized.as``),
        ``processor_name`` the processors, ``<processor_name>-cogroup-agg-<i>`` and
        ``<processor_name>-cogroup-merge`` (Kafka's ``Named.as``)."""
        return self._aggregate(initializer, name, processor_name, None, None, None)

    def windowed_by(self, windows: TimeWindows | SessionWindows | SlidingWindows) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Aggregate per time window (``TimeWindows``), over sliding windows (``SlidingWindows``)
        or per session (``SessionWindows``) as well as per key."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        if isinstance(windows, TimeWindows):
            windows.spec("windowed_by")
        elif not isinstance(windows, SlidingWindows):
            raise TopologyError(f"windowed_by() takes TimeWindows, SessionWindows or SlidingWindows, got {windows!r}", node="windowed_by")
        return TimeWindowedCogroupedKStream(self, windows)

    def _aggregate(self, initializer: Any, name: str | None, processor_name: str | None, windows: Windows | None, sessions: Any, merger: Any) -> KTable:
        check_callable(initializer, operator="aggregate", what="initializer()", arguments=0)
        graph = self._graph
        # Kafka's counter order: the store, each input's repartition, each input's node, the merge.
        store = name if name is not None else graph.store_name(_COGROUP_AGGREGATE)
        parents = [self._input_node(grouped, store) for grouped, _ in self._inputs]
        inputs = []
        for i, parent in enumerate(parents):
            node = _named(graph, None if processor_name is None else f"{processor_name}-cogroup-agg-{i}", _COGROUP_AGGREGATE)
            inputs.append(graph.add(CogroupAggregateNode(node, store, i), [parent]))
        merge = _named(graph, None if processor_name is None else f"{processor_name}-cogroup-merge", "COGROUPKSTREAM-MERGE")
        aggregation = Aggregation(AggregationKind.AGGREGATE, initializer=initializer, by_input=tuple(a for _, a in self._inputs))
        graph.add(CogroupMergeNode(merge, _aggregation_node(merge, store, aggregation, windows, sessions, merger, False)), inputs)
        return KTable(graph, merge, windows, _sessions=sessions)

    def _input_node(self, grouped: KGroupedStream, store: str) -> str:
        """What an input's node reads: its grouped stream, or, if its key changed, a repartition
        of it (made once per input of this cogroup, as Kafka does)."""
        if not grouped._repartition_required:
            return grouped._node
        made = self._repartitions.get(id(grouped))
        if made is not None:
            self._graph.burn_repartition_names()
            return made
        prefix = grouped._group_name if grouped._group_name is not None else store
        source = self._graph.add_repartition(grouped._node, prefix)
        self._repartitions[id(grouped)] = source
        return source


@dataclass(frozen=True)
class TimeWindowedCogroupedKStream:
    """A cogroup aggregated per time window or over sliding windows (Kafka's
    TimeWindowedCogroupedKStream, which sliding windows also give). Every revision is emitted:
    Kafka offers no emit strategy for cogroups."""

    _cogroup: CogroupedKStream
    _windows: TimeWindows | SlidingWindows

    def aggregate(self, initializer: Callable[[], Any], *, name: str | None = None, processor_name: str | None = None) -> KTable:
        """As :meth:`CogroupedKStream.aggregate`, per window; results are keyed by (key, window)."""
        if isinstance(self._windows, SlidingWindows):
            return self._cogroup._aggregate(initializer, name, processor_name, None, self._windows, None)
        return self._cogroup._aggregate(initializer, name, processor_name, self._windows.spec("aggregate"), None, None)


@dataclass(frozen=True)
class SessionWindowedCogroupedKStream:
    """A cogroup aggregated per session (Kafka's SessionWindowedCogroupedKStream)."""

    _cogroup: CogroupedKStream
    _sessions: SessionWindows

    def aggregate(
        self, initializer: Callable[[], Any], merger: Callable[[Any, Any, Any], Any], *, name: str | None = None, processor_name: str | None = None
    ) -> KTable:
        """As :meth:`CogroupedKStream.aggregate`, per session; two sessions a record bridges
        become one with ``merger(key, aggregate1, aggregate2)``."""
        check_callable(merger, operator="aggregate", what="merger(key, aggregate1, aggregate2)", arguments=3)
        return self._cogroup._aggregate(initializer, name, processor_name, None, self._sessions, merger)


@dataclass(frozen=True)
class SlidingWindowedKStream:
    """A grouped stream aggregated over sliding windows; results are keyed by (key, window) with
    both ends inclusive (``end = start + difference``)."""

    _graph: GraphBuilder
    _node: str
    _repartition_required: bool
    _group_name: str | None
    _sliding: SlidingWindows
    _emit_final: bool = False

    def _aggregate(self, aggregation: Aggregation, name: str | None) -> KTable:
        grouped = _Grouped(self._graph, self._node, self._repartition_required, self._group_name)
        return grouped._aggregate(aggregation, None, name, self._sliding, emit_final=self._emit_final)

    def emit_strategy(self, strategy: EmitStrategy) -> SlidingWindowedKStream:
        """``EmitStrategy.on_window_close()``: each window once, when stream time minus grace
        passes its end; ``on_window_update()``: every revision (the default)."""
        if not isinstance(strategy, EmitStrategy):
            raise TopologyError(f"emit_strategy() takes EmitStrategy.on_window_close() or on_window_update(), got {strategy!r}", node="emit_strategy")
        return SlidingWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, self._sliding, strategy.final)

    def count(self, *, name: str | None = None) -> KTable:
        return self._aggregate(Aggregation(AggregationKind.COUNT), name)

    def reduce(self, reducer: Callable[[Any, Any], Any], *, name: str | None = None) -> KTable:
        check_callable(reducer, operator="reduce", what="reducer(aggregate, value)", arguments=2)
        return self._aggregate(Aggregation(AggregationKind.REDUCE, function=reducer), name)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any], *, name: str | None = None) -> KTable:
        check_callable(initializer, operator="aggregate", what="initializer()", arguments=0)
        check_callable(aggregator, operator="aggregate", what="aggregator(key, value, aggregate)", arguments=3)
        return self._aggregate(Aggregation(AggregationKind.AGGREGATE, initializer=initializer, function=aggregator), name)


@dataclass(frozen=True)
class _SessionGrouped(_Grouped):
    _emit_final: bool = False

    def _aggregate(self, aggregation: Aggregation, windows: Windows | None, name: str | None, sessions: Any = None, merger: Any = None, *, emit_final: bool = False) -> KTable:
        return super()._aggregate(aggregation, windows, name, sessions, merger, emit_final=self._emit_final)


@dataclass(frozen=True)
class SessionWindowedKStream:
    """A grouped stream aggregated per session; results are keyed by (key, session) with both
    ends inclusive, and a session merged into a bigger one is forwarded as a delete."""

    _graph: GraphBuilder
    _node: str
    _repartition_required: bool
    _group_name: str | None
    _sessions: SessionWindows
    _emit_final: bool = False

    def _grouped(self) -> _SessionGrouped:
        return _SessionGrouped(self._graph, self._node, self._repartition_required, self._group_name, self._emit_final)

    def emit_strategy(self, strategy: EmitStrategy) -> SessionWindowedKStream:
        """``EmitStrategy.on_window_close()``: each session once, when stream time passes its end
        plus gap plus grace; ``on_window_update()``: every revision (the default)."""
        if not isinstance(strategy, EmitStrategy):
            raise TopologyError(f"emit_strategy() takes EmitStrategy.on_window_close() or on_window_update(), got {strategy!r}", node="emit_strategy")
        return SessionWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, self._sessions, strategy.final)

    def count(self, *, name: str | None = None) -> KTable:
        """Records per session (records with a null value are skipped and counted as dropped)."""
        merger = lambda key, one, two: one + two  # noqa: E731 - Kafka's count merger
        return self._grouped()._aggregate(Aggregation(AggregationKind.COUNT), None, name, self._sessions, merger)

    def reduce(self, reducer: Callable[[Any, Any], Any], *, name: str | None = None) -> KTable:
        """``reducer(aggregate, value)``; merging sessions reduces their aggregates the same way."""
        check_callable(reducer, operator="reduce", what="reducer(aggregate, value)", arguments=2)
        return self._grouped()._aggregate(Aggregation(AggregationKind.REDUCE, function=reducer), None, name, self._sessions, None)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        *,
        name: str | None = None,
    ) -> KTable:
        """``aggregator(key, value, aggregate)`` from ``initializer()``; two sessions that a record
        bridges become one with ``merger(key, aggregate1, aggregate2)`` (Kafka's argument order)."""
        check_callable(initializer, operator="aggregate", what="initializer()", arguments=0)
        check_callable(aggregator, operator="aggregate", what="aggregator(key, value, aggregate)", arguments=3)
        check_callable(merger, operator="aggregate", what="merger(key, aggregate1, aggregate2)", arguments=3)
        aggregation = Aggregation(AggregationKind.AGGREGATE, initializer=initializer, function=aggregator)
        return self._grouped()._aggregate(aggregation, None, name, self._sessions, merger)


@dataclass(frozen=True)
class TimeWindowedKStream(_Grouped):
    """A grouped stream aggregated per time window; results are keyed by (key, window)."""

    _time_windows: TimeWindows = TimeWindows()
    _emit_final: bool = False

    def _windows(self, operator: str) -> Windows:
        return self._time_windows.spec(operator)

    def emit_strategy(self, strategy: EmitStrategy) -> TimeWindowedKStream:
        """``EmitStrategy.on_window_close()``: forward each window's result once, when the window
        closes; ``on_window_update()``: every revision (the default)."""
        if not isinstance(strategy, EmitStrategy):
            raise TopologyError(f"emit_strategy() takes EmitStrategy.on_window_close() or on_window_update(), got {strategy!r}", node="emit_strategy")
        return TimeWindowedKStream(self._graph, self._node, self._repartition_required, self._group_name, self._time_windows, strategy.final)

    def _aggregate(self, aggregation: Aggregation, windows: Windows | None, name: str | None, sessions: SessionWindows | None = None, merger: Any = None, *, emit_final: bool = False) -> KTable:
        return super()._aggregate(aggregation, windows, name, sessions, merger, emit_final=self._emit_final)


@dataclass(frozen=True)
class KTable:
    """A table: the latest value per key, seen as its stream of updates (a ``None`` value is a
    delete). From ``builder.table``/``to_table`` (``_source`` names that source node) or from an
    aggregation, whose updates are revisions of the key's (window's) row."""

    _graph: GraphBuilder
    _node: str
    _windows: Windows | None = None
    _source: str | None = None
    _sessions: SessionWindows | SlidingWindows | None = None

    def _materialize(self) -> str:
        """The store something reading this table by key reads: a source is made to keep one;
        an aggregation always has one (not a windowed one: its keys are windowed)."""
        if self._source is None:
            name = self._node
            while isinstance(self._graph.node(name), (TableFilterNode, TableMapValuesNode)):
                (name,) = self._graph.parents(name)
            root = self._graph.node(name)
            if isinstance(root, CogroupMergeNode):
                root = root.aggregation  # a cogroup's table is its aggregation's
            if not isinstance(root, (AggregateNode, TableAggregateNode)):
                raise TopologyError(
                    f"{name}: this table cannot be read by key (joined or re-grouped): only tables from builder.table(), "
                    "to_table(), an aggregation (time-windowed too, not session or sliding), or a table-table join's inputs can",
                    node=name,
                )
            return root.store
        node = self._graph.node(self._source)
        if node.store is None:
            node = TableSourceNode(node.name, node.store_name, store=node.store_name)
            self._graph.replace(node)
        return node.store

    def _send_old_values(self, *, force: bool) -> bool:
        """Kafka's ``enableSendingOldValues(forceMaterialization)``: the filters between this
        table and its root learn each update's old value if the root keeps a store (an
        aggregation, or a source that is materialized, or is made so when ``force``) or is a
        table-table join, and then leave out the updates absent both before and after them.
        Returns whether they do."""
        chain, name = [], self._node
        while isinstance(self._graph.node(name), (TableFilterNode, TableMapValuesNode)):
            chain.append(name)
            (name,) = self._graph.parents(name)
        root = self._graph.node(name)
        if isinstance(root, TableSourceNode):
            if root.store is None:
                if not force:
                    return False
                self._graph.replace(TableSourceNode(root.name, root.store_name, store=root.store_name))
        elif isinstance(root, TableMergeNode):
            # A join's result has old values once both joined tables send theirs (Kafka's
            # KTableKTableJoinMerger forces them, whatever ``force`` says).
            for side in self._graph.parents(name):
                (joined,) = self._graph.parents(side)
                KTable(self._graph, joined)._send_old_values(force=True)
        elif not isinstance(root.aggregation if isinstance(root, CogroupMergeNode) else root, (AggregateNode, TableAggregateNode)):
            return False  # session and sliding tables: their filters forward every delete
        for name in chain:
            node = self._graph.node(name)
            if isinstance(node, TableFilterNode) and not node.old_values:
                self._graph.replace(TableFilterNode(node.name, node.predicate, node.negate, old_values=True))
        return True

    def filter(self, predicate: Callable[[Any, Any], bool] | Any, *, name: str | None = None) -> KTable:
        """Keep rows for which ``predicate(key, value)`` is true: an update that fails it is
        forwarded as a delete of the key, as Kafka does; if the table keeps a store (named, read
        by key or re-grouped), as Kafka does too, only where the row passed before."""
        fn = user_function(predicate, operator="filter")
        node = TableFilterNode(_named(self._graph, name, "KTABLE-FILTER"), fn)
        table = self._then(node)
        table._send_old_values(force=False)
        return table

    def filter_not(self, predicate: Callable[[Any, Any], bool] | Any, *, name: str | None = None) -> KTable:
        """Drop rows for which ``predicate(key, value)`` is true (forwarded as deletes, as with
        :meth:`filter`)."""
        fn = user_function(predicate, operator="filter_not")
        node = TableFilterNode(_named(self._graph, name, "KTABLE-FILTER"), fn, negate=True)
        table = self._then(node)
        table._send_old_values(force=False)
        return table

    def map_values(self, mapper: Callable[..., Any] | Any, *, name: str | None = None) -> KTable:
        """New values: ``mapper(value)`` or ``mapper(key, value)``; a delete stays a delete."""
        fn = user_function(mapper, operator="map_values", value_only_allowed=True)
        if fn.is_column:
            raise TopologyError("KTable.map_values() takes a Python callable or a pyarrow expression", node="map_values")
        node = TableMapValuesNode(_named(self._graph, name, "KTABLE-MAPVALUES"), fn)
        return self._then(node)

    def _then(self, node) -> KTable:
        if node.function is not None and node.function.is_column:
            raise TopologyError(f"{node.name}: KTable operations take Python callables or pyarrow expressions, not Spark Columns", node=node.name)
        return KTable(self._graph, self._graph.add(node, [self._node]), self._windows, self._source, self._sessions)

    # -- re-grouping ------------------------------------------------------------------------------

    def group_by(self, selector: Callable[[Any, Any], tuple[Any, Any]], *, name: str | None = None) -> KGroupedTable:
        """Re-group the table's rows: ``selector(key, value) -> (new_key, new_value)``. Aggregating
        the groups subtracts a row's old value from its old group and adds its new value to its
        new group whenever the row changes (Kafka's change pairs, through a repartition topic)."""
        check_callable(selector, operator="group_by", what="selector(key, value) -> (key, value)", arguments=2)
        fn = user_function(selector, operator="group_by")
        select = _named(self._graph, name, "KTABLE-SELECT")
        self._materialize()  # the old values come from the table's store
        self._send_old_values(force=True)
        node = self._graph.add(TableSelectNode(select, fn), [self._node])
        return KGroupedTable(self._graph, node, name)

    # -- table-table joins ----------------------------------------------------------------------

    def join(self, other: KTable, joiner: Callable[..., Any], fk_joiner: Callable[..., Any] | None = None, *, name: str | None = None, store_name: str | None = None) -> KTable:
        """Rows whose key is in both tables: ``joiner(value, other_value)`` (or ``joiner(key,
        value, other_value)``), updated whenever either side changes; a delete on either side
        deletes the joined row. Its timestamp is the larger of the two rows'.

        ``join(other, foreign_key_extractor, joiner)``: Kafka's foreign-key join: each row of
        this table joins the row of ``other`` whose key is ``foreign_key_extractor(value)`` (or
        ``(key, value)``); see :meth:`_join_foreign_key`."""
        if fk_joiner is not None:
            return self._join_foreign_key(other, joiner, fk_joiner, name, store_name, left=False)
        self._no_store_name("join", store_name)
        return self._join_table(other, joiner, name, JoinKind.INNER)

    def left_join(self, other: KTable, joiner: Callable[..., Any], fk_joiner: Callable[..., Any] | None = None, *, name: str | None = None, store_name: str | None = None) -> KTable:
        """Every row of this table, with ``other_value`` None where ``other`` has no row
        (``left_join(other, foreign_key_extractor, joiner)``: by foreign key, as :meth:`join`)."""
        if fk_joiner is not None:
            return self._join_foreign_key(other, joiner, fk_joiner, name, store_name, left=True)
        self._no_store_name("left_join", store_name)
        return self._join_table(other, joiner, name, JoinKind.LEFT)

    @staticmethod
    def _no_store_name(operator: str, store_name: str | None) -> None:
        if store_name is not None:
            raise TopologyError(f"KTable.{operator}(other, joiner): store_name= is for the foreign-key join, {operator}(other, foreign_key_extractor, joiner)", node=operator)

    def _join_foreign_key(self, other: KTable, extractor: Callable[..., Any], joiner: Callable[..., Any], name: str | None, store_name: str | None, *, left: bool) -> KTable:
        """Kafka's foreign-key join (KIP-213): the result is keyed by this table's key, updated
        when this row changes or when the ``other`` row it points at changes. A row whose
        foreign key is None joins nothing (a left join emits ``joiner(value, None)``); an inner
        join deletes the result row when the foreign row is missing or the foreign key changes
        to one without a row. ``name`` (Kafka's ``TableJoined.as``) names the join's processors,
        stores and internal topics; ``store_name`` (``Materialized.as``) the result's store.
        The result's timestamp is the larger of the two rows'."""
        operator = "left_join" if left else "join"
        if not isinstance(other, KTable):
            raise TopologyError(f"KTable.{operator}(other, foreign_key_extractor, joiner) joins another KTable, got {other!r}", node=operator)
        if self._windows is not None or other._windows is not None or self._sessions is not None or other._sessions is not None:
            raise TopologyError(f"KTable.{operator}(other, foreign_key_extractor, joiner): windowed tables cannot be joined by foreign key", node=operator)
        fk = user_function(extractor, operator=operator, value_only_allowed=True)
        if fk.kind is not FunctionKind.PYTHON:
            raise TopologyError(f"KTable.{operator}(): the foreign key extractor must be a Python callable (value) or (key, value) -> key", node=operator)
        fn = joiner_function(joiner, operator=operator)
        # Kafka forces both tables to send old values (and so to keep a store).
        other._send_old_values(force=True)
        self._send_old_values(force=True)
        left_store, right_store = self._materialize(), other._materialize()
        result, source = add_foreign_key_join(self._graph, self._node, left_store, other._node, right_store, fk, fn, left=left, name=name, store_name=store_name)
        return KTable(self._graph, result, _source=source)

    def outer_join(self, other: KTable, joiner: Callable[..., Any], *, name: str | None = None) -> KTable:
        """Every key of either table; the missing side's value is None."""
        return self._join_table(other, joiner, name, JoinKind.OUTER)

    def _join_table(self, other: KTable, joiner: Callable[..., Any], name: str | None, kind: JoinKind) -> KTable:
        operator = {JoinKind.INNER: "join", JoinKind.LEFT: "left_join", JoinKind.OUTER: "outer_join"}[kind]
        if not isinstance(other, KTable):
            raise TopologyError(f"KTable.{operator}() joins another KTable, got {other!r}", node=operator)
        fn = joiner_function(joiner, operator=operator)
        _same_key_kind(f"KTable.{operator}()", self._graph, self._node, other._node)
        # Kafka's counter order: the merge node, then this side, then the other side.
        merge = _named(self._graph, name, "KTABLE-MERGE")
        this_side = _named(self._graph, None if name is None else f"{name}-join-this", "KTABLE-JOINTHIS")
        other_side = _named(self._graph, None if name is None else f"{name}-join-other", "KTABLE-JOINOTHER")
        if kind is not JoinKind.INNER:
            self._send_old_values(force=True)
        if kind is JoinKind.OUTER:
            other._send_old_values(force=True)
        this_store, other_store = self._materialize(), other._materialize()
        self._graph.add(TableTableJoinNode(this_side, fn, other._node, other_store, kind, this_is_left=True), [self._node])
        self._graph.add(TableTableJoinNode(other_side, fn, self._node, this_store, kind, this_is_left=False), [other._node])
        return KTable(self._graph, self._graph.add(TableMergeNode(merge), [this_side, other_side]), self._windows)

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The stream of this table's updates (windowed keys carry window_start/window_end;
        a delete is a record with a ``None`` value)."""
        node = ToStreamNode(_named(self._graph, name, "KTABLE-TOSTREAM"))
        return KStream(self._graph, self._graph.add(node, [self._node]))

    def suppress(self, suppressed: Suppressed, *, name: str | None = None) -> KTable:
        """Hold revisions back: ``Suppressed.until_window_closes()`` emits one final result per
        window, once stream time reaches the window's end plus its grace period;
        ``Suppressed.until_time_limit(limit, BufferConfig...)`` emits a key's latest update once
        stream time is ``limit`` past the key's first buffered update (any table)."""
        if not isinstance(suppressed, Suppressed):
            raise TopologyError(f"suppress() takes Suppressed.until_window_closes() or until_time_limit(...), got {suppressed!r}", node="suppress")
        self._send_old_values(force=True)  # as Kafka's suppress: a source table keeps a store
        processor = name if name is not None else self._graph.processor_name("KTABLE-SUPPRESS")
        store = f"{name}-store" if name is not None else self._graph.store_name("KTABLE-SUPPRESS")
        buffer = suppressed.buffer
        sessions = isinstance(self._sessions, SessionWindows)
        if suppressed.time_limit_ms is not None:
            node = SuppressNode(processor, store, 0, suppressed.time_limit_ms, buffer.records_limit, buffer.bytes_limit, buffer.shut_down, sessions)
        else:
            node = SuppressNode(processor, store, self._final_results_delay(), None, buffer.records_limit, buffer.bytes_limit, buffer.shut_down, sessions)
        self._graph.add(node, [self._node])
        return KTable(self._graph, processor, self._windows, _sessions=self._sessions)

    def _final_results_delay(self) -> int:
        """How far stream time must pass a window's end before its result is final (Kafka's
        ``findAndVerifyWindowGrace``): the grace, plus the inactivity gap for sessions."""
        if isinstance(self._sessions, SessionWindows):
            return self._sessions.gap_ms + self._sessions.grace_ms
        if isinstance(self._sessions, SlidingWindows):
            return self._sessions.grace_ms
        if self._windows is None:
            raise TopologyError(
                "suppress(Suppressed.until_window_closes()) needs a windowed table: windowed_by(...) before aggregating",
                node="suppress",
            )
        return self._windows.grace_ms


@dataclass(frozen=True)
class GlobalKTable:
    """A table kept whole by every task that joins it (``StreamsBuilder.global_table``): join it
    with ``KStream.join / left_join(global_table, key_selector, joiner)``."""

    _graph: GraphBuilder
    _node: str
    _store: str


_TABLE_AGGREGATE_PREFIX = {
    AggregationKind.COUNT: "KTABLE-AGGREGATE",
    AggregationKind.AGGREGATE: "KTABLE-AGGREGATE",
    AggregationKind.REDUCE: "KTABLE-REDUCE",
}


@dataclass(frozen=True)
class KGroupedTable:
    """A table's rows re-grouped by ``KTable.group_by``, ready to aggregate with an adder and a
    subtractor."""

    _graph: GraphBuilder
    _node: str
    _group_name: str | None

    def _aggregate(self, aggregation: Aggregation, subtractor: Any, name: str | None) -> KTable:
        prefix = _TABLE_AGGREGATE_PREFIX[aggregation.kind]
        # Kafka names a table aggregation's store KTABLE-AGGREGATE-STATE-STORE-... whatever the
        # kind; only its processor is a KTABLE-REDUCE for reduce().
        store = name if name is not None else self._graph.store_name("KTABLE-AGGREGATE")
        topic = f"{self._group_name if self._group_name is not None else store}-repartition"
        source = self._graph.add_change_repartition(self._node, topic)
        processor = self._graph.processor_name(prefix)
        self._graph.add(TableAggregateNode(processor, store, aggregation, subtractor), [source])
        return KTable(self._graph, processor)

    def count(self, *, name: str | None = None) -> KTable:
        """Rows per group."""
        return self._aggregate(Aggregation(AggregationKind.COUNT), None, name)

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any], *, name: str | None = None) -> KTable:
        """``adder(aggregate, value)`` for a row joining the group, ``subtractor(aggregate,
        value)`` for a row leaving it (Kafka's argument order)."""
        check_callable(adder, operator="reduce", what="adder(aggregate, value)", arguments=2)
        check_callable(subtractor, operator="reduce", what="subtractor(aggregate, value)", arguments=2)
        return self._aggregate(Aggregation(AggregationKind.REDUCE, function=adder), subtractor, name)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        *,
        name: str | None = None,
    ) -> KTable:
        """``adder(key, value, aggregate)`` / ``subtractor(key, value, aggregate)``, starting from
        ``initializer()`` (Kafka's argument order)."""
        check_callable(initializer, operator="aggregate", what="initializer()", arguments=0)
        check_callable(adder, operator="aggregate", what="adder(key, value, aggregate)", arguments=3)
        check_callable(subtractor, operator="aggregate", what="subtractor(key, value, aggregate)", arguments=3)
        return self._aggregate(Aggregation(AggregationKind.AGGREGATE, initializer=initializer, function=adder), subtractor, name)
