"""Compile a sub-topology for Spark: which part runs as Catalyst, which in the processing core.

A sub-topology whose first steps (after its source) use Spark Column expressions runs them as
Catalyst over the records (read in ``records`` mode); the processing core takes over at the first
step that is not a Column expression (the *entry*). Every other sub-topology reads in
``descriptors`` mode: each task reads its own files, and the core runs everything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from conf.errors import TopologyError
from topology.functions import FunctionKind, UserFunction
from topology.graph import SubTopology, Topology
from topology.nodes import FilterNode, MapNode, MapValuesNode, SelectKeyNode, SourceNode
from topology.records import REJECTED

_CATALYST_STEPS = (FilterNode, MapValuesNode, SelectKeyNode, MapNode)
_FUNCTION_FIELDS = ("predicate", "mapper", "action")


@dataclass(frozen=True)
class CompiledSubtopology:
    subtopology: SubTopology
    source_topic: str
    catalyst_steps: tuple[str, ...]
    """Nodes run as Catalyst, in order, right after the source."""

    @property
    def entry(self) -> str | None:
        return self.catalyst_steps[-1] if self.catalyst_steps else None

    @property
    def mode(self) -> str:
        return "records" if self.catalyst_steps else "descriptors"

    def apply(self, topology: Topology, frame):
        """The Catalyst steps over a DataFrame of records (partition, offset, timestamp, key, value)."""
        from pyspark.sql import functions as F

        frame = frame.withColumn(REJECTED, F.lit(None).cast("string"))
        for name in self.catalyst_steps:
            node = topology.nodes[name]
            fn = node.function.fn
            if isinstance(node, FilterNode):
                # A null predicate (a missing field) marks the record bad instead of dropping it;
                # the processing core routes marked records to the dead-letter topic.
                reason = F.when(fn.isNull() & F.col(REJECTED).isNull(), F.lit(f"{name}: predicate is null for this record (a missing field?)"))
                frame = frame.withColumn(REJECTED, F.coalesce(F.col(REJECTED), reason))
                frame = frame.filter(F.col(REJECTED).isNotNull() | ((~fn) if node.negate else fn))
            elif isinstance(node, MapValuesNode):
                frame = frame.withColumn("value", fn)
            elif isinstance(node, SelectKeyNode):
                frame = frame.withColumn("key", fn)
            else:
                key, value = fn
                frame = frame.select("partition", "offset", "timestamp", key.alias("key"), value.alias("value"), REJECTED)
        return frame.select("partition", "offset", "timestamp", "key", "value", REJECTED)


def for_executors(topology: Topology) -> Topology:
    """The topology shipped to executors: Spark Column functions (driver-side JVM handles, which
    cannot be pickled and which executors never run) replaced by placeholders."""
    nodes = {}
    for name, node in topology.nodes.items():
        function = node.function
        if function is not None and function.is_column:
            field = next(f for f in _FUNCTION_FIELDS if getattr(node, f, None) is function)
            node = dataclasses.replace(node, **{field: UserFunction(None, FunctionKind.COLUMN)})
        nodes[name] = node
    return Topology(nodes, dict(topology.parents))


def compile_subtopology(topology: Topology, sub: SubTopology) -> CompiledSubtopology:
    sources = [n for n in sub.nodes if isinstance(topology.nodes[n], SourceNode)]
    topics = [t for n in sources for t in topology.nodes[n].topics]
    if len(sources) != 1 or len(topics) != 1:
        raise TopologyError(
            f"sub-topology {sub.id} reads {topics}; the Spark runtime runs sub-topologies with exactly one source topic",
            node=sources[0] if sources else None,
        )
    steps: list[str] = []
    current = sources[0]
    while len(topology.children[current]) == 1:
        child = topology.children[current][0]
        node = topology.nodes[child]
        function = node.function
        if not isinstance(node, _CATALYST_STEPS) or function is None or not function.is_column:
            break
        steps.append(child)
        current = child
    for name in sub.nodes:
        function = topology.nodes[name].function
        if name not in steps and function is not None and function.is_column:
            raise TopologyError(
                f"{name} uses a Spark Column expression after steps that are not: Column steps must come first in a "
                "sub-topology (or use pyarrow expressions, which run anywhere)",
                node=name,
            )
    return CompiledSubtopology(sub, topics[0], tuple(steps))
