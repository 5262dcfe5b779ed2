"""``Topology.describe()``: Kafka's ``TopologyDescription`` text, character for character.

Within a sub-topology, nodes (and the names after ``-->``/``<--``) are ordered as Kafka's node
comparator orders them: larger downstream sub-tree first, then by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topology.nodes import Node, SinkNode, SourceNode
from topology.split import GlobalStoreGroup, SubTopology


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
            return f"Sink: {self.name} ({self.detail})\n      <-- {predecessors}"
        return f"Processor: {self.name} (stores: {self.detail})\n      --> {successors}\n      <-- {predecessors}"


@dataclass(frozen=True)
class SubtopologyDescription:
    id: int
    nodes: tuple[NodeDescription, ...]

    def __str__(self) -> str:
        return f"Sub-topology: {self.id}\n" + "".join(f"    {node}\n" for node in self.nodes) + "\n"


@dataclass(frozen=True)
class GlobalStoreDescription:
    id: int
    source: NodeDescription
    processor: NodeDescription

    def __str__(self) -> str:
        return f"Sub-topology: {self.id} for global store (will not generate tasks)\n    {self.source}\n    {self.processor}\n"


@dataclass(frozen=True)
class TopologyDescription:
    subtopologies: tuple[SubtopologyDescription | GlobalStoreDescription, ...]
    """Sub-topologies and global stores, by id."""

    def __str__(self) -> str:
        return "Topologies:\n " + "".join(f"  {s}" for s in self.subtopologies)


def _java_set(items) -> str:
    return "[" + ", ".join(items) + "]"


def describe(
    nodes: Mapping[str, Node],
    parents: Mapping[str, tuple[str, ...]],
    children: Mapping[str, tuple[str, ...]],
    subtopologies: Sequence[SubTopology],
    global_stores: Sequence[GlobalStoreGroup] = (),
) -> TopologyDescription:
    sizes: dict[str, int] = {}

    def size(name: str) -> int:
        if name not in sizes:
            sizes[name] = 1 + sum(size(child) for child in children[name])
        return sizes[name]

    def ordered(names) -> tuple[str, ...]:
        return tuple(sorted(names, key=lambda n: (-size(n), n)))

    def predecessors(name: str) -> tuple[str, ...]:
        # Kafka sorts a node's predecessors as it connects them, and connecting one adds this
        # node's size to it: of two predecessors equal in the end (the two sides of a table-table
        # join), the one connected first sorts first.
        order = {parent: i for i, parent in enumerate(parents[name])}
        return tuple(sorted(parents[name], key=lambda n: (-size(n), order[n])))

    result = []
    for sub in subtopologies:
        described = []
        for name in ordered(sub.nodes):
            node = nodes[name]
            if isinstance(node, SourceNode):
                kind, detail = "Source", _java_set(node.topics)
            elif isinstance(node, SinkNode) and node.extractor is not None:
                kind, detail = "Sink", f"extractor class: {node.extractor.describe()}"
            elif isinstance(node, SinkNode):
                kind, detail = "Sink", f"topic: {node.topic}"
            else:
                kind, detail = "Processor", _java_set(node.described_stores)
            described.append(NodeDescription(name, kind, detail, ordered(children[name]), predecessors(name)))
        result.append(SubtopologyDescription(sub.id, tuple(described)))
    for group in global_stores:
        source, processor = (n for n in group.nodes)  # Kafka's global store: one source, one processor
        result.append(
            GlobalStoreDescription(
                group.id,
                NodeDescription(source, "Source", _java_set(nodes[source].topics), (processor,), ()),
                NodeDescription(processor, "Processor", _java_set(nodes[processor].stores), (), (source,)),
            )
        )
    return TopologyDescription(tuple(sorted(result, key=lambda d: d.id)))
