"""Routing records between branches: Kafka's KStreamBranch (``split``) and the merge of several
streams (``merge``, and the two sides of a stream-stream join).

A branch node decides, per record, which one of its branches takes it; every branch is an
operator of its own reading the branch node's output, so the decision is handed over through
the task's shared objects with the flow it belongs to.
"""

from __future__ import annotations

import numpy as np

from deltastreams.streams._internal.processing.flow import Flow
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.stateless import _call_each
from deltastreams.topology.nodes import BranchChildNode, BranchNode, MergeNode

NO_BRANCH = -1


class BranchOperator(Operator, node=BranchNode):
    """Evaluates the predicates in order and stops at the first that holds, as Kafka does (later
    predicates are not called for that record). A predicate that raises sends its record to
    the dead-letter topic."""

    node: BranchNode

    def __init__(self, node: BranchNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.decisions = build.shared.setdefault("branches", {})

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        chosen = np.full(len(flow), NO_BRANCH, dtype=np.int64)
        undecided = np.ones(len(flow), dtype=bool)
        for index, predicate in enumerate(self.node.predicates):
            rows = np.flatnonzero(undecided)
            if not len(rows):
                break
            results, ok = _call_each(self.name, predicate, flow.take(rows), context.bad)
            holds = np.fromiter((bool(r) for r in results), dtype=bool, count=len(results)) & ok
            chosen[rows[holds]] = index
            undecided[rows[holds | ~ok]] = False  # a record whose predicate raised goes nowhere
        if len(self.node.branches) > len(self.node.predicates):  # the default branch
            chosen[undecided] = len(self.node.predicates)
        self.decisions[self.name] = (flow, chosen)
        return flow


class BranchChildOperator(Operator, node=BranchChildNode):
    """The records its branch node chose for it."""

    node: BranchChildNode

    def __init__(self, node: BranchChildNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.decisions = build.shared.setdefault("branches", {})

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        decided, chosen = self.decisions[self.node.branch]
        if decided is not flow:
            raise RuntimeError(f"{self.name}: its branch node's decisions belong to another batch")
        return flow.filter(chosen == self.node.index)


class MergeOperator(Operator, node=MergeNode):
    """Its parents' records, already merged in the task's order (``_seq``)."""

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return flow
