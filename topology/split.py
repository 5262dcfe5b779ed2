"""Split a topology into sub-topologies at repartition boundaries.

Nodes joined by an edge belong together, and so do nodes sharing a state store (a join and the
table it reads, as in Kafka); a repartition topic joins its sink and source through a topic, not
an edge, so it is where one sub-topology ends and the next begins. Sub-topology ids
follow Kafka: groups are numbered in the sorted order of their source node names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from topology.nodes import Node, SinkNode, SourceNode


@dataclass(frozen=True)
class SubTopology:
    """Operators between repartition boundaries, fused; runs as one task per source partition."""

    id: int
    nodes: tuple[str, ...]
    """In creation order, which is a topological order."""
    source_topics: tuple[str, ...]
    sink_topics: tuple[str, ...]
    stores: tuple[str, ...]


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


def split_subtopologies(nodes: Mapping[str, Node], parents: Mapping[str, tuple[str, ...]]) -> tuple[SubTopology, ...]:
    """The sub-topologies of the graph ``nodes`` (in creation order) with edges ``parents``."""
    component = _components(nodes, parents)
    sources = sorted(n for n, node in nodes.items() if isinstance(node, SourceNode))
    others = sorted(n for n in nodes if n not in sources)
    group_ids: dict[str, int] = {}
    for name in sources + others:
        group_ids.setdefault(component[name], len(group_ids))

    result = []
    for group_root, group_id in sorted(group_ids.items(), key=lambda item: item[1]):
        names = tuple(n for n in nodes if component[n] == group_root)
        members = [nodes[n] for n in names]
        result.append(
            SubTopology(
                id=group_id,
                nodes=names,
                source_topics=tuple(t for n in members if isinstance(n, SourceNode) for t in n.topics),
                sink_topics=tuple(dict.fromkeys(n.topic for n in members if isinstance(n, SinkNode))),
                stores=tuple(dict.fromkeys(s for n in members for s in n.stores)),
            )
        )
    return tuple(result)
