"""Split a topology into sub-topologies at repartition boundaries.

Nodes joined by an edge belong together, and so do nodes sharing a state store (a join and the
table it reads, as in Kafka); a repartition topic joins its sink and source through a topic, not
an edge, so it is where one sub-topology ends and the next begins. Sub-topology ids
follow Kafka: groups are numbered in the order their first source node was created (Kafka numbers
them as it writes nodes to its topology builder, which it does in creation order; a group always
starts with one of its sources).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from deltastreams.topology.nodes import Node, SinkNode, SourceNode, StreamGlobalTableJoinNode


@dataclass(frozen=True)
class SubTopology:
    """Operators between repartition boundaries, fused; runs as one task per source partition."""

    id: int
    nodes: tuple[str, ...]
    """In creation order, which is a topological order."""
    source_topics: tuple[str, ...]
    """Including the global tables' topics it reads."""
    sink_topics: tuple[str, ...]
    stores: tuple[str, ...]
    """Including its own copy of every global table it reads."""
    global_topics: tuple[str, ...] = ()
    """Topics of the global tables it reads: each task reads all of their partitions."""
    global_nodes: tuple[str, ...] = ()
    """The nodes keeping those global tables, run before the sub-topology's own nodes."""

    @property
    def partitioned_topics(self) -> tuple[str, ...]:
        """The source topics read partition by partition (one task per partition; joins need
        them co-partitioned): all but the global tables'."""
        return tuple(t for t in self.source_topics if t not in self.global_topics)


@dataclass(frozen=True)
class GlobalStoreGroup:
    """A global table's source and table source: Kafka describes it as a sub-topology of its own
    that generates no tasks; here every task of a sub-topology that reads the table runs it."""

    id: int
    nodes: tuple[str, ...]
    topics: tuple[str, ...]
    store: str


def _components(nodes: Mapping[str, Node], parents: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    root: dict[str, str] = {name: name for name in nodes}

    def find(name: str) -> str:
        while root[name] != name:
            root[name] = root[root[name]]
            name = root[name]
        return name

    for name, node_parents in parents.items():
        for parent in node_parents:
            root[find(name)] = find(parent)
    owner: dict[str, str] = {}
    for name, node in nodes.items():
        for store in node.stores:
            root[find(name)] = find(owner.setdefault(store, name))
    return {name: find(name) for name in nodes}


def split_subtopologies(
    nodes: Mapping[str, Node], parents: Mapping[str, tuple[str, ...]]
) -> tuple[tuple[SubTopology, ...], tuple[GlobalStoreGroup, ...]]:
    """The sub-topologies of the graph ``nodes`` (in creation order) with edges ``parents``, and
    its global tables. Both are numbered together, as Kafka numbers its node groups."""
    component = _components(nodes, parents)
    sources = [n for n, node in nodes.items() if isinstance(node, SourceNode)]
    others = [n for n in nodes if n not in sources]
    group_ids: dict[str, int] = {}
    for name in sources + others:
        group_ids.setdefault(component[name], len(group_ids))

    groups = {root: tuple(n for n in nodes if component[n] == root) for root in group_ids}
    global_by_store: dict[str, GlobalStoreGroup] = {}
    for root, names in groups.items():
        if any(isinstance(nodes[n], SourceNode) and nodes[n].is_global for n in names):
            topics = tuple(t for n in names if isinstance(nodes[n], SourceNode) for t in nodes[n].topics)
            (store,) = (s for n in names for s in nodes[n].stores)
            global_by_store[store] = GlobalStoreGroup(group_ids[root], names, topics, store)

    result = []
    for root, group_id in sorted(group_ids.items(), key=lambda item: item[1]):
        names = groups[root]
        if any(g.id == group_id for g in global_by_store.values()):
            continue
        members = [nodes[n] for n in names]
        reads = [global_by_store[n.store] for n in members if isinstance(n, StreamGlobalTableJoinNode)]
        reads = list({g.id: g for g in reads}.values())
        global_topics = tuple(dict.fromkeys(t for g in reads for t in g.topics))
        result.append(
            SubTopology(
                id=group_id,
                nodes=names,
                source_topics=tuple(t for n in members if isinstance(n, SourceNode) for t in n.topics) + global_topics,
                sink_topics=tuple(dict.fromkeys(t for n in members if isinstance(n, SinkNode) for t in n.topics)),
                stores=tuple(dict.fromkeys([s for n in members for s in n.stores] + [g.store for g in reads])),
                global_topics=global_topics,
                global_nodes=tuple(n for g in reads for n in g.nodes),
            )
        )
    return tuple(result), tuple(sorted(global_by_store.values(), key=lambda g: g.id))
