"""Decide, per sub-topology, which part runs as Catalyst and which in the processing core.

A sub-topology whose first steps (after its source) use Spark Column expressions runs them as
Catalyst over the records (``records`` mode); the processing core takes over after the last such
step (the *entry*). Every other sub-topology runs in ``descriptors`` mode: each task reads its own
files and the core runs everything. The Spark side of this lives in
``deltastreams.streams._internal.spark.catalyst``; this module only decides.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from deltastreams.conf.errors import TopologyError
from deltastreams.topology.functions import FunctionKind, UserFunction
from deltastreams.topology.graph import SubTopology, Topology
from deltastreams.topology.nodes import FilterNode, MapNode, MapValuesNode, SelectKeyNode, SourceNode

_CATALYST_STEPS = (FilterNode, MapValuesNode, SelectKeyNode, MapNode)
_FUNCTION_FIELDS = ("predicate", "mapper", "action")


@dataclass(frozen=True)
class CompiledSubtopology:
    subtopology: SubTopology
    source_topics: tuple[str, ...]
    catalyst_steps: tuple[str, ...]
    """Nodes run as Catalyst, in order, right after the source."""

    @property
    def entry(self) -> str | None:
        return self.catalyst_steps[-1] if self.catalyst_steps else None

    @property
    def mode(self) -> str:
        return "records" if self.catalyst_steps else "descriptors"


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


def compile_subtopology(topology: Topology, sub: SubTopology, *, kafka_topics: frozenset[str] = frozenset()) -> CompiledSubtopology:
    """Which steps run as Catalyst: the Column steps right after the source of a sub-topology that
    reads one topic from outside the application (records enter Spark only there). Records of a
    topic in Kafka (``kafka_topics``) are read by the tasks themselves, never by Spark."""
    sources = [n for n in sub.nodes if isinstance(topology.nodes[n], SourceNode)]
    topics = tuple(t for n in sources for t in topology.nodes[n].topics)
    steps: list[str] = []
    current = sources[0]
    external = (
        len(sources) == 1 and len(topics) == 1 and topics[0] not in topology.internal_topics and not sub.global_topics
        and topology.nodes[sources[0]].timestamp_extractor is None and topics[0] not in kafka_topics
        and topology.nodes[sources[0]].value_format is None  # Catalyst would see the encoded bytes
    )
    while external and len(topology.children[current]) == 1:
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
            if external:
                where = "after steps that are not: Column steps must come first in a sub-topology"
            elif len(sources) == 1 and topology.nodes[sources[0]].value_format is not None:
                where = "on a topic with a value_format: its values are decoded by the processing core, after Spark read the bytes"
            elif any(t in kafka_topics for t in topics):
                where = "on a topic read from Kafka: Column steps run only over Delta topics, which Spark reads"
            else:
                where = (
                    "in a sub-topology that reads a repartition topic or several topics: Column steps run only right after "
                    "the source of a sub-topology reading one input topic"
                )
            raise TopologyError(f"{name} uses a Spark Column expression {where} (or use pyarrow expressions, which run anywhere)", node=name)
    return CompiledSubtopology(sub, topics, tuple(steps))
