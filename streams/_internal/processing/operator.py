"""Operators: the runnable form of a topology node, built for one task.

Compiling a sub-topology for the core yields a list of operators in topological order (see
:mod:`deltastreams.streams._internal.processing.plan`); the task walks them, handing each the concatenation
of its parents' outputs. An operator has one entry point, ``process(flow, context) -> flow``;
declares the stores it uses (``stores``) and the topics it writes records to (``emits``); and
reports everything besides its output flow through the :class:`ProcessContext`: records for a
topic, records too late for any window, dropped-record counts, bad records. It never partitions,
writes files or talks to an engine: the core is pure.

An operator class names the node type it runs (``class FilterOperator(Operator, node=FilterNode)``)
and is found by it: a new kind of node needs one new class, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from deltastreams.conf.errors import TopologyError
from deltastreams.state import ChangeLoggingStore
from deltastreams.streams._internal.processing.flow import BadRecords, Flow
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import Node


IDLE_BLOCKED = -1
"""``next_close_ms`` of an operator that cannot close anything until it sees a record (a store
from an older version that does not know its key type yet): its task is not idle-closed."""


@dataclass(frozen=True)
class BuildContext:
    """What building a task's operators needs beyond the nodes."""

    stores: Mapping[str, ChangeLoggingStore]
    """The task's stores, by name."""
    caching: bool
    """Emit only the last revision per window (or key) of a batch."""
    topology: Topology | None = None
    """The whole topology, for operators that read another node's state (a join's table)."""
    table_changes: dict[str, Any] = field(default_factory=dict)
    """Per table store, the changes its source applied in the current batch, shared with the
    joins that read it (:class:`deltastreams.streams._internal.processing.table.BatchChanges`)."""
    application_id: str = ""
    task_id: str = ""
    wall_clock_ms: int | None = None
    """The wall-clock time the task starts at (None: the machine's clock; the test driver's own)."""
    ranks: dict[str, int] = field(default_factory=dict)
    """Each node's place in the depth-first walk of a record through the sub-topology (Kafka's
    processing order within one record), filled in when the task is planned
    (:mod:`deltastreams.streams._internal.processing.walk`)."""
    edges: dict[tuple[str, str], int] = field(default_factory=dict)
    """Each edge's ``(parent, child)`` place in that walk."""
    shared: dict[str, Any] = field(default_factory=dict)
    """Objects several operators of the task work through together (a stream-stream join's
    two sides), by kind."""


@dataclass
class ProcessContext:
    """What operators report during one batch, besides their output flows."""

    bad: BadRecords
    outputs: dict[str, list[Flow]] = field(default_factory=dict)
    output_ranks: dict[str, list[int]] = field(default_factory=dict)
    late: list[Flow] = field(default_factory=list)
    dropped_records: int = 0
    stream_times: Any = None
    """Gives the task's stream time after each record of the batch, indexed by ``_seq`` (without
    the time from before the batch: operators that need it keep it); computed only when asked."""
    wall_clock_ms: int | None = None
    """The time wall-clock punctuations see (None: the machine's clock)."""
    input_headers: Any = None
    """Gives the headers of the batch's input records, indexed by ``_seq`` (None when no input
    topic carries headers); computed only when asked."""
    idle_stream_time: int | None = None
    """After an idle advance: the largest stream time an operator advanced to."""
    walks: bool = False
    """Records of one input record are ordered by their walk: the task reads a table by key,
    has branches meeting again, or several sinks of one topic, where that order shows
    (:mod:`deltastreams.streams._internal.processing.walk`). Otherwise no record gets a ``_walk``."""

    def advanced_to(self, stream_time: int) -> None:
        """An operator's stream time moved to ``stream_time`` by an idle advance."""
        self.idle_stream_time = max(stream_time, self.idle_stream_time or stream_time)

    def emit(self, topic: str, flow: Flow, rank: int = 0) -> None:
        """Records for ``topic`` (logical name), in the order the task produced them, by the
        operator ``rank`` (its place in the walk: records of one input record that several
        sinks write to one topic go out in the walk's order)."""
        self.outputs.setdefault(topic, []).append(flow)
        self.output_ranks.setdefault(topic, []).append(rank)

    def emit_late(self, flow: Flow) -> None:
        """Records too late for every window they belong to (for the late-records topic)."""
        if len(flow):
            self.late.append(flow)

    def drop(self, count: int) -> None:
        """Records skipped by design (Kafka's dropped-records sensor)."""
        self.dropped_records += count


class Operator:
    """One node of a sub-topology, ready to process a task's batches."""

    node_type: ClassVar[type[Node]]
    _by_node_type: ClassVar[dict[type[Node], type[Operator]]] = {}

    def __init_subclass__(cls, *, node: type[Node], **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if node in Operator._by_node_type:
            raise TypeError(f"{node.__name__} already runs as {Operator._by_node_type[node].__name__}")
        cls.node_type = node
        Operator._by_node_type[node] = cls

    @staticmethod
    def for_node(node: Node, parents: tuple[str, ...], build: BuildContext) -> Operator:
        operator = Operator._by_node_type.get(type(node))
        if operator is None:
            raise TopologyError(f"{node.name}: the processing core cannot run {type(node).__name__} nodes", node=node.name)
        return operator(node, parents, build)

    def __init__(self, node: Node, parents: tuple[str, ...], build: BuildContext) -> None:
        self.node = node
        self.name = node.name
        self.parents = parents
        """Operators (or the task's input) whose outputs this operator consumes."""

    @property
    def stores(self) -> tuple[str, ...]:
        return self.node.stores

    @property
    def emits(self) -> tuple[str, ...]:
        """Topics this operator writes records to."""
        return ()

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        raise NotImplementedError

    # -- idle close (wall-clock completeness, beyond Kafka: deltastreams.streams._internal.processing.idle) ----

    def next_close_ms(self) -> int | None:
        """How much further stream time must move before this operator closes something (a
        window, a session, a buffered result): None if nothing is open or it keeps no stream
        time; :data:`IDLE_BLOCKED` if it cannot close anything before it sees a record."""
        return None

    def advance_idle(self, flow: Flow, by_ms: int, context: ProcessContext) -> Flow:
        """Process ``flow`` (its parents' output in an idle run), then move this operator's stream
        time ``by_ms`` further, as a record that far ahead would have, without data: emit what
        closes. Operators keeping no stream time only process."""
        return self.process(flow, context)

    def store_view(self) -> object | None:
        """A read-only view of this operator's store, for queries, if it has one."""
        return None

    def close(self) -> None:
        """The task is done with this operator (its user code may release resources)."""
