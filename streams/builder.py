"""StreamsBuilder: where a topology starts."""

from __future__ import annotations

import pyarrow as pa

from conf.errors import TopologyError
from streams.dsl import KStream
from topology.graph import GraphBuilder, Topology
from topology.nodes import SourceNode


class StreamsBuilder:
    """Builds a topology with the DSL; ``build()`` returns the immutable :class:`Topology`."""

    def __init__(self) -> None:
        self._graph = GraphBuilder()

    def stream(
        self,
        topics: str | list[str],
        *,
        key_type: pa.DataType | None = None,
        value_type: pa.DataType | None = None,
        name: str | None = None,
    ) -> KStream:
        """The records of one or more topics (each partition read in offset order).

        ``key_type``/``value_type`` declare what the topology expects (Kafka's ``Consumed``
        serdes); a topic whose columns differ stops the application at start, naming the column."""
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise TopologyError(f"stream() takes a topic name or a list of them, got {topics!r}", node="stream")
        node = SourceNode(
            name if name is not None else self._graph.processor_name("KSTREAM-SOURCE"),
            tuple(names),
            key_type=key_type,
            value_type=value_type,
        )
        return KStream(self._graph, self._graph.add(node))

    def build(self) -> Topology:
        return self._graph.build()
