"""Topology nodes: pure, immutable specs. Runtime objects are built from them elsewhere.

Each DSL call adds one node (sometimes a few, as Kafka does for repartitioning); a node's
``name`` follows Kafka's counter names (``KSTREAM-FILTER-0000000001``) unless the user named it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from deltastreams.sinks.formats import ValueFormat
from deltastreams.topology.functions import UserFunction


@dataclass(frozen=True)
class Windows:
    """Time windows ``[start, start + size)``, starting at multiples of ``advance`` from the epoch."""

    size_ms: int
    advance_ms: int
    grace_ms: int


@dataclass(frozen=True)
class Node:
    name: str

    @property
    def stores(self) -> tuple[str, ...]:
        return ()

    @property
    def function(self) -> UserFunction | None:
        """The user function this node applies to records, if any."""
        return None

    @property
    def described_stores(self) -> tuple[str, ...]:
        """The stores ``describe()`` lists (Kafka's connected stores)."""
        return self.stores


@dataclass(frozen=True)
class SourceNode(Node):
    topics: tuple[str, ...]
    internal: bool = False
    """Reads a repartition topic (named without the application id)."""
    key_type: Any = None
    value_type: Any = None
    """Expected Arrow types (Kafka's Consumed serdes): checked against the topic when the
    application starts."""
    is_global: bool = False
    """Feeds a global table: every task reading the table reads all of the topic's partitions."""
    timestamp_extractor: Any = None
    """``extractor(key, value, record_timestamp) -> timestamp`` (Kafka's TimestampExtractor):
    the record's event time, before anything (the task's order included) looks at it."""
    value_format: ValueFormat | None = None
    """The topic's values are bytes in this format (Kafka's value serde), decoded by the
    processing core before anything else looks at them; records that do not decode go to the
    dead-letter topic."""


@dataclass(frozen=True)
class SinkNode(Node):
    topic: str
    internal: bool = False
    key_column: str = "key"
    value_column: str = "value"
    extractor: UserFunction | None = None
    """``to(extractor, topics=...)``: ``extractor(key, value)`` names each record's topic, one
    of ``extracted_topics`` (declared up front, so the topics exist before records arrive)."""
    extracted_topics: tuple[str, ...] = ()
    value_format: ValueFormat | None = None
    """Values are written as bytes in this format (Kafka's ``Produced`` value serde); a value
    that does not fit goes to the dead-letter topic."""

    @property
    def topics(self) -> tuple[str, ...]:
        """Every topic this sink may write."""
        return self.extracted_topics if self.extractor is not None else (self.topic,)

    @property
    def function(self) -> UserFunction | None:
        return self.extractor


@dataclass(frozen=True)
class FilterNode(Node):
    predicate: UserFunction
    negate: bool = False

    @property
    def function(self) -> UserFunction:
        return self.predicate


@dataclass(frozen=True)
class NullKeyFilterNode(Node):
    """Kafka puts a filter before every repartition sink; Kafka drops null keys there silently,
    here they go to the dead-letter topic (or fail the job). ``relaxed``: a join that takes
    null keys (a left join of a table or global table, a left or outer join of streams) is
    downstream, so null keys go through to it, as Kafka 3.7+ lets them (KIP-962)."""

    relaxed: bool = False


@dataclass(frozen=True)
class MapNode(Node):
    mapper: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.mapper


@dataclass(frozen=True)
class MapValuesNode(Node):
    mapper: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.mapper


@dataclass(frozen=True)
class FlatMapNode(Node):
    mapper: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.mapper


@dataclass(frozen=True)
class SelectKeyNode(Node):
    mapper: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.mapper


@dataclass(frozen=True)
class PeekNode(Node):
    action: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.action


@dataclass(frozen=True)
class FlatMapValuesNode(Node):
    mapper: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.mapper


@dataclass(frozen=True)
class ForeachNode(Node):
    """``foreach(action)``: calls ``action(key, value)`` per record; a terminal step."""

    action: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.action


@dataclass(frozen=True)
class PrintNode(Node):
    """``print(Printed...)``: Kafka's KStreamPrint, ``[label]: <mapper(key, value)>`` per record to
    standard output (of the process running the task) or a file."""

    label: str
    mapper: UserFunction | None = None
    path: str | None = None


@dataclass(frozen=True)
class BranchNode(Node):
    """Kafka's KSTREAM-BRANCH: each record goes to the first branch whose predicate it satisfies,
    else to the default branch if there is one (the last of ``branches``)."""

    predicates: tuple[UserFunction, ...] = ()
    branches: tuple[str, ...] = ()
    """The branch nodes, in predicate order, then the default branch's, if any."""


@dataclass(frozen=True)
class BranchChildNode(Node):
    """One branch of a :class:`BranchNode` (Kafka's PassThrough child): its ``index`` in the
    branch node's ``branches``."""

    branch: str
    index: int


@dataclass(frozen=True)
class ProcessNode(Node):
    """``KStream.process / process_values(supplier, *store_names)``: a user processor, made by
    ``supplier()`` for each task, connected to the user stores ``store_names``. Its punctuation
    schedules live in ``schedule_store`` (not shown by ``describe()``, as Kafka keeps them
    internally). ``fixed_key``: ``process_values``, whose records keep their key."""

    supplier: Any
    store_names: tuple[str, ...]
    schedule_store: str
    fixed_key: bool = False

    @property
    def stores(self) -> tuple[str, ...]:
        return (*self.store_names, self.schedule_store)

    @property
    def described_stores(self) -> tuple[str, ...]:
        return self.store_names


@dataclass(frozen=True)
class BatchProcessNode(ProcessNode):
    """``KStream.process_batches(supplier, *store_names)``: a user batch processor, called with
    Arrow tables instead of records. Its stores are typed (``store_types``: name, key type, value
    type, from their builders) because it reads and writes them an array at a time."""

    store_types: tuple[tuple[str, Any, Any], ...] = ()


class AggregationKind(Enum):
    COUNT = "count"
    REDUCE = "reduce"
    AGGREGATE = "aggregate"


@dataclass(frozen=True)
class Aggregation:
    """What a grouped aggregation folds: count, ``reduce(reducer)`` with ``reducer(agg, value)``,
    or ``aggregate(initializer, aggregator)`` with ``aggregator(key, value, agg)``."""

    kind: AggregationKind
    initializer: Any = None
    function: Any = None
    by_input: tuple[Any, ...] = ()
    """A cogroup's aggregators, one per input (``aggregator(key, value, agg)``): each record is
    folded by the one of the input it came from, instead of ``function``."""


@dataclass(frozen=True)
class AggregateNode(Node):
    """Grouped aggregation into a KTable, windowed when ``windows`` is set."""

    store: str
    aggregation: Aggregation
    windows: Windows | None = None
    emit_final: bool = False
    """``emit_strategy(EmitStrategy.on_window_close())``: forward each window once, when it
    closes, instead of every revision."""

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class SessionWindowsSpec:
    """Sessions: a key's records closer than ``gap_ms`` to each other form one session; a record
    may still join or start a session while the session's end is within ``gap + grace`` of stream
    time."""

    gap_ms: int
    grace_ms: int


@dataclass(frozen=True)
class SessionAggregateNode(Node):
    """Grouped aggregation per session (Kafka's KStreamSessionWindowAggregate): a record
    merges the sessions within ``gap`` of it into one (``merger(key, agg1, agg2)``), whose
    merged-away predecessors are forwarded as deletes."""

    store: str
    aggregation: Aggregation
    sessions: SessionWindowsSpec
    merger: Any = None
    emit_final: bool = False
    """``emit_strategy(EmitStrategy.on_window_close())``: each session once, when it closes."""

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class SlidingAggregateNode(Node):
    """Grouped aggregation over sliding windows (Kafka's KStreamSlidingWindowAggregate): windows
    ``[t - difference, t]`` and ``[t + 1, t + 1 + difference]`` around each record ``t``, both ends
    inclusive, kept only when they hold records."""

    store: str
    aggregation: Aggregation
    difference_ms: int
    grace_ms: int
    emit_final: bool = False
    """``emit_strategy(EmitStrategy.on_window_close())``: each window once, when it closes."""

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class CogroupAggregateNode(Node):
    """One input of a cogroup (Kafka's COGROUPKSTREAM-AGGREGATE): folds its stream's records into
    the cogroup's store ``store`` with the aggregator at ``index`` of the cogroup's aggregation.
    All inputs fold into one store in the task's record order, so the fold itself runs in the
    cogroup's merge node (:class:`CogroupMergeNode`), which reads every input's records."""

    store: str
    index: int

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class CogroupMergeNode(Node):
    """Kafka's COGROUPKSTREAM-MERGE, the cogroup's table: runs ``aggregation``, the aggregation
    node (plain, time-, session- or sliding-windowed, named as this node) whose
    ``aggregation.by_input`` holds each input's aggregator, over the records of all the
    cogroup's inputs. Kafka lists the store on the inputs' nodes only."""

    aggregation: AggregateNode | SessionAggregateNode | SlidingAggregateNode

    @property
    def stores(self) -> tuple[str, ...]:
        return self.aggregation.stores

    @property
    def described_stores(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class SuppressNode(Node):
    """``suppress(until_window_closes)``: one final result per window once stream time reaches
    ``end + grace``; ``suppress(until_time_limit(limit, buffer))`` (``time_limit_ms`` set): a
    key's latest update, ``limit`` after its first buffered one, or earlier when the buffer is full
    (``max_records`` / ``max_bytes``; ``shut_down_when_full`` fails instead)."""

    store: str
    grace_ms: int
    time_limit_ms: int | None = None
    max_records: int | None = None
    max_bytes: int | None = None
    shut_down_when_full: bool = False
    sessions: bool = False
    """Suppresses a session-windowed table: a window is keyed by its end as well as its start
    (two sessions of a key can share a start: one merged away, the one it merged into)."""

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class ToStreamNode(Node):
    pass


@dataclass(frozen=True)
class TableSourceNode(Node):
    """Kafka's KTableSource: the latest value per key of its parent's records (a ``None`` value
    deletes the key; a ``None`` key is dropped). ``store`` is set once something reads the table
    by key (a join) or the user named it; until then the table forwards every update without
    keeping state, as Kafka's unmaterialized source does. ``store_name`` is the name reserved for
    it when the node was created (Kafka's counter order)."""

    store_name: str
    store: str | None = None

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,) if self.store is not None else ()


@dataclass(frozen=True)
class TableFilterNode(Node):
    """``KTable.filter``: an update whose new value fails the predicate becomes a tombstone."""

    predicate: UserFunction
    negate: bool = False
    old_values: bool = False
    """Kafka's ``sendOldValues``: the filter knows each update's old value (its table's root keeps
    a store, or is a table-table join), so an update that is absent both before and after the
    filter is not forwarded at all instead of as a tombstone."""

    @property
    def function(self) -> UserFunction:
        return self.predicate


@dataclass(frozen=True)
class TableMapValuesNode(Node):
    mapper: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.mapper


@dataclass(frozen=True)
class StreamTableJoinNode(Node):
    """``KStream.join / left_join(table)``: each stream record looks up its key in the table as it
    stood when the record was processed (table updates produce nothing). ``table`` is the table's
    node; ``store`` the source store its value getter reads."""

    joiner: UserFunction
    table: str
    store: str
    left: bool = False

    @property
    def function(self) -> UserFunction:
        return self.joiner

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class StreamGlobalTableJoinNode(Node):
    """``KStream.join / left_join(global_table, key_selector, joiner)``: each stream record looks
    up ``key_selector(key, value)`` in the global table's store ``store`` (node ``table``). The
    store belongs to the global table, which Kafka does not list among the join's stores."""

    key_selector: UserFunction
    joiner: UserFunction
    table: str
    store: str
    left: bool = False

    @property
    def function(self) -> UserFunction:
        return self.joiner


@dataclass(frozen=True)
class TableSelectNode(Node):
    """``KTable.group_by(selector)`` (Kafka's KTABLE-SELECT): each update becomes a change pair
    for the new grouping key, ``{"new": ..., "old": ...}``: the old row's pair subtracts from its
    group, the new row's adds to its group (one record when both keys agree)."""

    selector: UserFunction

    @property
    def function(self) -> UserFunction:
        return self.selector


@dataclass(frozen=True)
class TableAggregateNode(Node):
    """``KGroupedTable.count / reduce / aggregate``: folds change pairs, subtracting old values
    and adding new ones (Kafka's KTableAggregate and KTableReduce)."""

    store: str
    aggregation: Aggregation
    subtractor: Any = None

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


class JoinKind(Enum):
    INNER = "inner"
    LEFT = "left"
    OUTER = "outer"


@dataclass(frozen=True)
class TableTableJoinNode(Node):
    """One side of ``KTable.join / left_join / outer_join(other)`` (Kafka's KTABLE-JOINTHIS or
    KTABLE-JOINOTHER): each update of ``this`` side looks up the ``other`` table (node ``other``,
    read through store ``store``) as it stood at that update. ``this_is_left`` tells which
    argument of the user's joiner this side's value is."""

    joiner: UserFunction
    other: str
    store: str
    kind: JoinKind
    this_is_left: bool

    @property
    def function(self) -> UserFunction:
        return self.joiner

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class TableMergeNode(Node):
    """Kafka's KTABLE-MERGE: the updates of both sides of a table-table join, in order."""


@dataclass(frozen=True)
class JoinWindowsSpec:
    """A stream-stream join's window: a record at ``t`` joins the other side's records in
    ``[t - before, t + after]``; non-joined records wait ``grace`` more for late partners."""

    before_ms: int
    after_ms: int
    grace_ms: int

    @property
    def retention_ms(self) -> int:
        """How long a side's window store keeps a record, behind its observed stream time."""
        return self.before_ms + self.after_ms + self.grace_ms


@dataclass(frozen=True)
class StreamJoinWindowNode(Node):
    """Kafka's KSTREAM-WINDOWED: keeps one side's records in its window store (``store``) for
    the other side to find, and forwards them."""

    store: str

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class StreamStreamJoinNode(Node):
    """One side of ``KStream.join / left_join / outer_join(other_stream, joiner, windows)``
    (Kafka's KSTREAM-JOINTHIS / JOINOTHER / OUTERTHIS / OUTEROTHER): each record of this side
    joins the records of the other side's window store ``other_store`` within the window. For
    left and outer joins, records without a partner wait in the shared ``outer_store`` until their
    window closes, then go out joined with None (Kafka's spurious-result fix)."""

    joiner: UserFunction
    this_store: str
    other_store: str
    outer_store: str | None
    windows: JoinWindowsSpec
    kind: JoinKind
    this_is_left: bool

    @property
    def function(self) -> UserFunction:
        return self.joiner

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.other_store,) if self.outer_store is None else (self.other_store, self.outer_store)


@dataclass(frozen=True)
class MergeNode(Node):
    """Kafka's KSTREAM-MERGE: its parents' records, in the task's order."""


@dataclass(frozen=True)
class StoreSpec:
    """A state store of the topology; its changelog is ``<application_id>-<name>-changelog``."""

    name: str

    def changelog_topic(self, application_id: str) -> str:
        return f"{application_id}-{self.name}-changelog"
