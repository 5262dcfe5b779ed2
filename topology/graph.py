"""The logical graph: a builder the DSL appends to, and the immutable :class:`Topology` it builds.

Names come from one counter shared by processors and stores, as in Kafka, so an unnamed node's
name shifts when nodes are added before it; name stateful nodes (``name=``) to keep their stores,
changelogs and repartition topics stable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from deltastreams.conf.errors import TopologyError
from deltastreams.topology.describe import TopologyDescription, describe
from deltastreams.topology.foreign_key_nodes import ResponseJoinNode, SubscriptionReceiveNode
from deltastreams.topology.nodes import (
    JoinKind,
    Node,
    NullKeyFilterNode,
    SinkNode,
    SourceNode,
    StoreSpec,
    StreamGlobalTableJoinNode,
    StreamStreamJoinNode,
    StreamTableJoinNode,
)
from deltastreams.topology.split import GlobalStoreGroup, SubTopology, split_subtopologies

__all__ = ["GraphBuilder", "SubTopology", "Topology"]

KAFKA_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")
"""The names Kafka generates for the nodes repartitions are named after (Kafka's own test); a
cogroup's generated store name (``COGROUPKSTREAM-...``) is not one of them."""


class GraphBuilder:
    """Mutable while the DSL runs; ``build()`` freezes it into a :class:`Topology`."""

    def __init__(self) -> None:
        self._index = 0
        self._nodes: dict[str, Node] = {}
        self._parents: dict[str, tuple[str, ...]] = {}
        self._join_repartitions: dict[str, str] = {}
        self.user_stores: dict[str, object] = {}
        """Stores registered with ``StreamsBuilder.add_state_store``, by name."""

    def processor_name(self, prefix: str) -> str:
        name = f"{prefix}-{self._index:010d}"
        self._index += 1
        return name

    def store_name(self, prefix: str) -> str:
        return self.processor_name(f"{prefix}-STATE-STORE")

    def add(self, node: Node, parents: Sequence[str] = ()) -> str:
        if node.name in self._nodes:
            raise TopologyError(f"a node named '{node.name}' already exists; names must be unique", node=node.name)
        for parent in parents:
            if isinstance(self._nodes[parent], SinkNode):
                raise TopologyError(f"'{node.name}' cannot follow sink '{parent}'", node=node.name)
        if isinstance(node, SourceNode):
            for other in self._nodes.values():
                shared = set(node.topics) & set(getattr(other, "topics", ()))
                if isinstance(other, SourceNode) and shared:
                    raise TopologyError(
                        f"topic '{sorted(shared)[0]}' is already read by source '{other.name}': a topic feeds one source, "
                        "as in Kafka; reuse the stream (or table) that source made",
                        node=node.name,
                    )
        self._nodes[node.name] = node
        self._parents[node.name] = tuple(parents)
        return node.name

    def add_repartition(self, parent: str, prefix: str) -> str:
        """Kafka's repartition: null-key filter -> sink ``<prefix>-repartition`` | source of it.
        Returns the source node's name; the topic is a sub-topology boundary. Its nodes are
        named after the topic unless ``prefix`` is a name Kafka generates (then by counter), as
        Kafka's ``createRepartitionedSource`` decides: a prefix taken from a node the user named
        (a join's re-keyed stream) names them too."""
        topic = prefix if prefix.endswith("-repartition") else f"{prefix}-repartition"
        # Kafka always burns three counter values here, named or not, to keep later names stable.
        generated_sink = self.processor_name("KSTREAM-SINK")
        generated_filter = self.processor_name("KSTREAM-FILTER")
        generated_source = self.processor_name("KSTREAM-SOURCE")
        if not KAFKA_GENERATED.fullmatch(prefix):
            sink, key_filter, source = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"
        else:
            sink, key_filter, source = generated_sink, generated_filter, generated_source
        self.add(NullKeyFilterNode(key_filter), [parent])
        self.add(SinkNode(sink, topic, internal=True), [key_filter])
        return self.add(SourceNode(source, (topic,), internal=True))

    def add_change_repartition(self, parent: str, topic: str) -> str:
        """The repartition of a table's change pairs (Kafka's GroupedTableOperationRepartitionNode):
        a sink and a source, no null-key filter (the select step handles null keys)."""
        self.add(SinkNode(self.processor_name("KSTREAM-SINK"), topic, internal=True), [parent])
        return self.add(SourceNode(self.processor_name("KSTREAM-SOURCE"), (topic,), internal=True))

    def repartition_for_join(self, parent: str, prefix: str, *, user_named: bool) -> str:
        """A repartition before a join. Kafka reuses a re-keyed stream's repartition topic for
        every join of it that is not named (still burning three counter values each time)."""
        if user_named or parent not in self._join_repartitions:
            source = self.add_repartition(parent, prefix)
            if not user_named:
                self._join_repartitions[parent] = source
            return source
        self.burn_repartition_names()
        return self._join_repartitions[parent]

    def burn_repartition_names(self) -> None:
        """Take the three counter values a repartition takes, for one Kafka creates the names of
        but does not add (it reuses an earlier one): later names stay Kafka's."""
        for prefix in ("KSTREAM-SINK", "KSTREAM-FILTER", "KSTREAM-SOURCE"):
            self.processor_name(prefix)

    def node(self, name: str) -> Node:
        return self._nodes[name]

    def parents(self, name: str) -> tuple[str, ...]:
        return self._parents[name]

    def replace(self, node: Node) -> None:
        """Swap a node for an updated spec of itself (same name, same edges)."""
        if node.name not in self._nodes:
            raise KeyError(node.name)
        self._nodes[node.name] = node

    def build(self) -> Topology:
        if not self._nodes:
            raise TopologyError("the topology is empty: add a stream with StreamsBuilder.stream(topic)")
        return Topology(_relax_null_key_filters(self._nodes, self._parents), dict(self._parents))


def _takes_null_keys(node: Node) -> bool:
    """A join that joins a null-keyed record with nothing rather than dropping it (KIP-962)."""
    if isinstance(node, (StreamTableJoinNode, StreamGlobalTableJoinNode)):
        return node.left
    return isinstance(node, StreamStreamJoinNode) and node.kind is not JoinKind.INNER


def _relax_null_key_filters(nodes: Mapping[str, Node], parents: Mapping[str, tuple[str, ...]]) -> dict[str, Node]:
    """The nodes, with every repartition's null-key filter that has such a join anywhere
    downstream (through further repartitions too) letting null keys through, as Kafka 3.7+
    rewrites its repartitions when it builds the topology."""
    children: dict[str, list[str]] = {name: [] for name in nodes}
    for name, node_parents in parents.items():
        for parent in node_parents:
            children[parent].append(name)
    readers: dict[str, list[str]] = {}
    for name, node in nodes.items():
        if isinstance(node, SourceNode) and node.internal:
            for topic in node.topics:
                readers.setdefault(topic, []).append(name)
    reaches: dict[str, bool] = {}

    def downstream(name: str) -> list[str]:
        node = nodes[name]
        if isinstance(node, SinkNode) and node.internal:
            return readers.get(node.topic, [])
        return children[name]

    def reaches_join(name: str) -> bool:
        if name not in reaches:
            reaches[name] = False  # a cycle (none in a DSL graph) must not recurse forever
            reaches[name] = any(_takes_null_keys(nodes[c]) or reaches_join(c) for c in downstream(name))
        return reaches[name]

    return {
        name: NullKeyFilterNode(name, relaxed=True) if isinstance(node, NullKeyFilterNode) and reaches_join(name) else node
        for name, node in nodes.items()
    }


@dataclass(frozen=True)
class Topology:
    """A built topology: nodes, edges, sub-topologies, stores and topics."""

    nodes: Mapping[str, Node]
    parents: Mapping[str, tuple[str, ...]]

    @cached_property
    def children(self) -> Mapping[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {name: [] for name in self.nodes}
        for name, parents in self.parents.items():
            for parent in parents:
                out[parent].append(name)
        return {name: tuple(kids) for name, kids in out.items()}

    @cached_property
    def _split(self) -> tuple[tuple[SubTopology, ...], tuple[GlobalStoreGroup, ...]]:
        return split_subtopologies(self.nodes, self.parents)

    @property
    def subtopologies(self) -> tuple[SubTopology, ...]:
        """The sub-topologies that run as tasks (global tables run inside their readers' tasks)."""
        return self._split[0]

    @property
    def global_stores(self) -> tuple[GlobalStoreGroup, ...]:
        return self._split[1]

    @cached_property
    def levels(self) -> Mapping[int, int]:
        """Each sub-topology's depth in the graph of repartition topics (0: reads none written
        here). A foreign-key join makes two sub-topologies feed each other; the topic closing
        such a cycle (see :attr:`cycle_topics`) does not count."""
        writer_of = {t: s.id for s in self.subtopologies for t in s.sink_topics if t in self.internal_topics}
        levels: dict[int, int] = {}

        def level(sub: SubTopology, visiting: frozenset[int]) -> int:
            if sub.id not in levels:
                visiting = visiting | {sub.id}
                upstream = [writer_of[t] for t in sub.source_topics if t in writer_of and writer_of[t] not in visiting]
                levels[sub.id] = 1 + max((level(self.subtopology(u), visiting) for u in upstream), default=-1)
            return levels[sub.id]

        for sub in self.subtopologies:
            level(sub, frozenset())
        return levels

    @cached_property
    def cycle_topics(self) -> frozenset[str]:
        """Internal topics written by a sub-topology no earlier than their reader (a foreign-key
        join's response or subscription topic, whichever closes the cycle): their records are
        committed as a sink's are, and read in a later trigger."""
        writer_of = {t: s.id for s in self.subtopologies for t in s.sink_topics if t in self.internal_topics}
        return frozenset(
            t for s in self.subtopologies for t in s.source_topics if t in writer_of and self.levels[writer_of[t]] >= self.levels[s.id]
        )

    @cached_property
    def copartitioned_topics(self) -> frozenset[str]:
        """Internal topics partitioned like their reader's input tables rather than like their
        writer's tasks: a foreign-key join's subscription topic (like the right table's topic)
        and response topic (like the left table's), as Kafka co-partitions them."""
        readers = {name for name, node in self.nodes.items() if isinstance(node, (SubscriptionReceiveNode, ResponseJoinNode))}
        return frozenset(
            t
            for name, node in self.nodes.items()
            if isinstance(node, SourceNode) and node.internal and set(self.children[name]) & readers
            for t in node.topics
        )

    def subtopology(self, sub_id: int) -> SubTopology:
        return next(s for s in self.subtopologies if s.id == sub_id)

    @cached_property
    def stores(self) -> Mapping[str, StoreSpec]:
        return {store: StoreSpec(store) for node in self.nodes.values() for store in node.stores}

    @cached_property
    def internal_topics(self) -> frozenset[str]:
        """Repartition topics, named without the application id."""
        return frozenset(t for n in self.nodes.values() if isinstance(n, SourceNode) and n.internal for t in n.topics)

    @property
    def source_topics(self) -> tuple[str, ...]:
        """Input topics read from outside the application."""
        return tuple(
            dict.fromkeys(t for n in self.nodes.values() if isinstance(n, SourceNode) and not n.internal for t in n.topics)
        )

    @property
    def sink_topics(self) -> tuple[str, ...]:
        """Output topics written for the outside world."""
        return tuple(dict.fromkeys(t for n in self.nodes.values() if isinstance(n, SinkNode) and not n.internal for t in n.topics))

    def physical_topic(self, application_id: str, topic: str) -> str:
        """Repartition topics get the application id as prefix, as in Kafka."""
        return f"{application_id}-{topic}" if topic in self.internal_topics else topic

    def describe(self) -> TopologyDescription:
        return describe(self.nodes, self.parents, self.subtopologies, self.global_stores)
