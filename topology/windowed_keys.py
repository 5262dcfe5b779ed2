"""Whether the records a node forwards have windowed keys (Kafka's ``Windowed<K>``).

Kafka's types say it: ``KTable<Windowed<K>, V>`` from a windowed aggregation joins only another
table of ``Windowed<K>`` keys, and a stream joins it only if its key is ``Windowed<K>`` too. Python
has no such types, so the DSL walks the graph to the node that made the keys and refuses, at build
time, the joins the Java compiler would refuse.
"""

from __future__ import annotations

from enum import Enum

from deltastreams.topology.graph import GraphBuilder
from deltastreams.topology.nodes import (
    AggregateNode,
    CogroupMergeNode,
    FilterNode,
    FlatMapValuesNode,
    MapValuesNode,
    MergeNode,
    PeekNode,
    SessionAggregateNode,
    SlidingAggregateNode,
    StreamTableJoinNode,
    SuppressNode,
    TableFilterNode,
    TableMapValuesNode,
    TableMergeNode,
    TableTableJoinNode,
    ToStreamNode,
)


class KeyKind(Enum):
    PLAIN = "plain keys"
    TIME_WINDOWED = "time-windowed keys (Windowed<K> of windowed_by(TimeWindows))"
    SESSION_WINDOWED = "session- or sliding-windowed keys"


_KEY_PRESERVING = (
    FilterNode, FlatMapValuesNode, MapValuesNode, PeekNode, StreamTableJoinNode, SuppressNode,
    TableFilterNode, TableMapValuesNode, TableTableJoinNode, ToStreamNode, MergeNode, TableMergeNode,
)
"""Nodes whose records keep their parent's keys (a merge: its first parent's, as Kafka's
types require all parents to share the key type)."""


def key_kind(graph: GraphBuilder, name: str) -> KeyKind:
    """The kind of key ``name`` forwards."""
    while True:
        node = graph.node(name)
        if isinstance(node, CogroupMergeNode):
            node = node.aggregation
        if isinstance(node, AggregateNode):
            return KeyKind.PLAIN if node.windows is None else KeyKind.TIME_WINDOWED
        if isinstance(node, (SessionAggregateNode, SlidingAggregateNode)):
            return KeyKind.SESSION_WINDOWED
        if not isinstance(node, _KEY_PRESERVING):
            return KeyKind.PLAIN
        name = graph.parents(name)[0]
