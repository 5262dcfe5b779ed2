"""KTable: the changelog of an aggregation. Every update is a revision of the key's (window's) row."""

from __future__ import annotations

from dataclasses import dataclass

from conf.errors import TopologyError
from streams.kstream import KStream
from streams.windows import Suppressed
from topology.graph import GraphBuilder
from topology.nodes import SuppressNode, ToStreamNode, Windows


@dataclass(frozen=True)
class KTable:
    _graph: GraphBuilder
    _node: str
    _windows: Windows | None = None

    @property
    def windowed(self) -> bool:
        return self._windows is not None

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The stream of this table's revisions (windowed keys carry window_start/window_end)."""
        node = ToStreamNode(name if name is not None else self._graph.processor_name("KTABLE-TOSTREAM"))
        return KStream(self._graph, self._graph.add(node, [self._node]), False, self.windowed)

    def suppress(self, suppressed: Suppressed, *, name: str | None = None) -> KTable:
        """Hold revisions back: ``Suppressed.until_window_closes()`` emits one final result per
        window, once stream time reaches the window's end plus its grace period."""
        if not isinstance(suppressed, Suppressed):
            raise TopologyError(f"suppress() takes Suppressed.until_window_closes(), got {suppressed!r}", node="suppress")
        if self._windows is None:
            raise TopologyError(
                "suppress(Suppressed.until_window_closes()) needs a windowed table: windowed_by(...) before aggregating",
                node="suppress",
            )
        processor = name if name is not None else self._graph.processor_name("KTABLE-SUPPRESS")
        store = f"{name}-store" if name is not None else self._graph.store_name("KTABLE-SUPPRESS")
        self._graph.add(SuppressNode(processor, store, self._windows.grace_ms), [self._node])
        return KTable(self._graph, processor, self._windows)
