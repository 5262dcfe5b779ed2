"""``Topology.describe()``: Kafka's ``TopologyDescription`` text, character for character.

Within a sub-topology, nodes (and the names after ``-->``/``<--``) are ordered as Kafka's node
comparator orders them: larger downstream sub-tree first, then by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from topology.nodes import SinkNode, SourceNode

if TYPE_CHECKING:
    from topology.graph import Topology


@dataclass(frozen=True)
class NodeDescription:
    name: str
    kind: str  # "Source", "Processor" or "Sink"
    detail: str  # topics, stores or topic
    successors: tuple[str, ...]
    predecessors: tuple[str, ...]

    def __str__(self) -> str:
        successors = ", ".join(self.successors) or "none"
        predecessors = ", ".join(self.predecessors) or "none"
        if self.kind == "Source":
            return f"Source: {self.name} (topics: {self.detail})\n      --> {successors}"
        if self.kind == "Sink":
            return f"Sink: {self.name} (topic: {self.detail})\n      <-- {predecessors}"
        return f"Processor: {self.name} (stores: {self.detail})\n      --> {successors}\n      <-- {predecessors}"


@dataclass(frozen=True)
class SubtopologyDescription:
    id: int
    nodes: tuple[NodeDescription, ...]

    def __str__(self) -> str:
        return f"Sub-topology: {self.id}\n" + "".join(f"    {node}\n" for node in self.nodes) + "\n"


@dataclass(frozen=True)
class TopologyDescription:
    subtopologies: tuple[SubtopologyDescription, ...]

    def __str__(self) -> str:
        return "Topologies:\n " + "".join(f"  {s}" for s in self.subtopologies)


def _java_set(items) -> str:
    return "[" + ", ".join(items) + "]"


def describe(topology: Topology) -> TopologyDescription:
    sizes: dict[str, int] = {}

    def size(name: str) -> int:
        if name not in sizes:
            sizes[name] = 1 + sum(size(child) for child in topology.children[name])
        return sizes[name]

    def ordered(names) -> tuple[str, ...]:
        return tuple(sorted(names, key=lambda n: (-size(n), n)))

    subtopologies = []
    for sub in topology.subtopologies:
        nodes = []
        for name in ordered(sub.nodes):
            node = topology.nodes[name]
            if isinstance(node, SourceNode):
                kind, detail = "Source", _java_set(node.topics)
            elif isinstance(node, SinkNode):
                kind, detail = "Sink", node.topic
            else:
                kind, detail = "Processor", _java_set(node.stores)
            nodes.append(
                NodeDescription(name, kind, detail, ordered(topology.children[name]), ordered(topology.parents[name]))
            )
        subtopologies.append(SubtopologyDescription(sub.id, tuple(nodes)))
    return TopologyDescription(tuple(subtopologies))
