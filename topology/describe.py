"""``Topology.describe()``: Kafka's ``TopologyDescription`` text, character for character.

Within a sub-topology, nodes are ordered as Kafka's node comparator orders them: larger
downstream sub-tree first, then by name; the names after ``-->``/``<--`` as Kafka's describe()
happens to insert them into sets ordered by that comparator while the sizes still grow
(:mod:`deltastreams.topology.java_order`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deltastreams.topology.java_order import TreeSet, hash_set_order
from deltastreams.topology.nodes import Node, SinkNode, SourceNode
from deltastreams.topology.split import GlobalStoreGroup, SubTopology


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
    """``items`` as Kafka prints a node's stores or topics: a Java ``HashSet<String>`` of them."""
    return "[" + ", ".join(hash_set_order(items)) + "]"


def _connected(sub: SubTopology, parents: Mapping[str, tuple[str, ...]]) -> tuple[dict[str, TreeSet], dict[str, TreeSet], dict[str, int]]:
    """Each node's successors and predecessors in Kafka's order, and its sub-tree size.

    Kafka's ``describeSubtopology`` takes the nodes in ``HashMap`` order and connects each to its
    predecessors (in the order they were given), adding each to the other's ``TreeSet`` ordered
    by sub-tree size, then name, and only then adding the node's size to the predecessor's and to
    their connected ancestors': the sizes those sets compare are still growing."""
    size = {name: 1 for name in sub.nodes}

    def compare(a: str, b: str) -> int:
        if a == b:
            return 0
        if size[a] != size[b]:
            return size[b] - size[a]
        return -1 if a < b else 1

    successors = {name: TreeSet(compare) for name in sub.nodes}
    predecessors = {name: TreeSet(compare) for name in sub.nodes}

    def grow(name: str, delta: int) -> None:
        size[name] += delta
        for predecessor in predecessors[name]:
            grow(predecessor, delta)

    for name in hash_set_order(sub.nodes):
        for parent in parents[name]:
            predecessors[name].add(parent)
            successors[parent].add(name)
            grow(parent, size[name])
    return successors, predecessors, size


def describe(
    nodes: Mapping[str, Node],
    parents: Mapping[str, tuple[str, ...]],
    subtopologies: Sequence[SubTopology],
    global_stores: Sequence[GlobalStoreGroup] = (),
) -> TopologyDescription:
    result = []
    for sub in subtopologies:
        successors, predecessors, size = _connected(sub, parents)
        described = []
        # The sub-topology's own TreeSet is filled once the sizes are final: a plain sort.
        for name in sorted(sub.nodes, key=lambda n: (-size[n], n)):
            node = nodes[name]
            if isinstance(node, SourceNode):
                kind, detail = "Source", _java_set(node.topics)
            elif isinstance(node, SinkNode) and node.extractor is not None:
                kind, detail = "Sink", f"extractor class: {node.extractor.describe()}"
            elif isinstance(node, SinkNode):
                kind, detail = "Sink", f"topic: {node.topic}"
            else:
                kind, detail = "Processor", _java_set(node.described_stores)
            described.append(NodeDescription(name, kind, detail, tuple(successors[name]), tuple(predecessors[name])))
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
