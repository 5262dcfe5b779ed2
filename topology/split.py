"""Split a topology into sub-topologies at repartition boundaries.

Nodes joined by an edge belong together; a repartition topic joins its sink and source through a
topic, not an edge, so it is where one sub-topology ends and the next begins. Sub-topology ids
follow Kafka: groups are numbered in the sorted order of their source node names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topology.nodes import SinkNode, SourceNode

if TYPE_CHECKING:
    from topology.graph import SubTopology, Topology


def _components(topology: Topology) -> dict[str, str]:
    root: dict[str, str] = {name: name for name in topology.nodes}

    def find(name: str) -> str:
        while root[name] != name:
            root[name] = root[root[name]]
            name = root[name]
        return name

    for name, parents in topology.parents.items():
        for parent in parents:
            root[find(name)] = find(parent)
    return {name: find(name) for name in topology.nodes}


def split_subtopologies(topology: Topology) -> tuple[SubTopology, ...]:
    from topology.graph import SubTopology

    component = _components(topology)
    sources = sorted(n for n, node in topology.nodes.items() if isinstance(node, SourceNode))
    others = sorted(n for n in topology.nodes if n not in sources)
    group_ids: dict[str, int] = {}
    for name in sources + others:
        group_ids.setdefault(component[name], len(group_ids))

    result = []
    for group_root, group_id in sorted(group_ids.items(), key=lambda item: item[1]):
        names = tuple(n for n in topology.nodes if component[n] == group_root)
        nodes = [topology.nodes[n] for n in names]
        result.append(
            SubTopology(
                id=group_id,
                nodes=names,
                source_topics=tuple(t for n in nodes if isinstance(n, SourceNode) for t in n.topics),
                sink_topics=tuple(dict.fromkeys(n.topic for n in nodes if isinstance(n, SinkNode))),
                stores=tuple(s for n in nodes for s in n.stores),
            )
        )
    return tuple(result)
