"""Compile a sub-topology for the core: its inputs and its operators, once per task.

Every node after the task's input becomes an :class:`Operator`, in topological order (the
sub-topology's creation order). Importing the operator modules here registers their classes.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltastreams.conf.errors import TopologyError
from deltastreams.streams._internal.processing import aggregate, batch_processors, cogroup, foreign_key_joins, routing, sessions, sliding, stateless, stream_joins, suppress, table, table_grouping, table_joins, user_processors  # noqa: F401 - register operators
from deltastreams.streams._internal.processing.input import TaskInput
from deltastreams.streams._internal.processing.operator import BuildContext, Operator
from deltastreams.streams._internal.processing.walk import walk_ranks
from deltastreams.topology.graph import SubTopology, Topology
from deltastreams.topology.nodes import SourceNode


@dataclass(frozen=True)
class TaskPlan:
    inputs: tuple[TaskInput, ...]
    operators: tuple[Operator, ...]


def _upstream(topology: Topology, node: str) -> set[str]:
    """``node`` and every node it reads from."""
    seen, todo = set(), [node]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(topology.parents[name])
    return seen


def plan_task(topology: Topology, sub: SubTopology, build: BuildContext, *, entry: str | None = None) -> TaskPlan:
    """The task's plan. With ``entry``, the inputs are that node's output (an engine ran it and
    everything before it) and the operators start after it."""
    nodes = sub.global_nodes + sub.nodes  # global tables first: they are read before the streams
    if entry is None:
        sources = [n for n in nodes if isinstance(topology.nodes[n], SourceNode)]
        inputs = tuple(TaskInput(n, topology.nodes[n].topics) for n in sources)
        done = set(sources)
    else:
        inputs = (TaskInput(entry, sub.source_topics),)
        done = _upstream(topology, entry)
    sources = [n for n in nodes if isinstance(topology.nodes[n], SourceNode)]
    ranks, edges = walk_ranks(topology.children, sources, set(nodes))
    build.ranks.update(ranks)
    build.edges.update(edges)
    operators = []
    for name in nodes:
        if name in done:
            continue
        node = topology.nodes[name]
        if node.function is not None and node.function.is_column:
            raise TopologyError(
                f"{name} uses a Spark Column expression; the engine-independent core (and the "
                "TopologyTestDriver) runs Python callables, the Spark runtime compiles Columns to Catalyst",
                node=name,
            )
        operators.append(Operator.for_node(node, topology.parents[name], build))
    return TaskPlan(inputs, tuple(operators))
