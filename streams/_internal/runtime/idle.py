"""When to run an idle task (idle close, beyond Kafka): the driver's wall-clock bookkeeping.

The processing core moves an idle task's stream time on request
(:mod:`deltastreams.streams._internal.processing.idle`); this decides when, and how far, the same way for
the Spark runtime and the test driver.

Per task it keeps the wall-clock time its stream time was last anchored (the batch that brought
its last record, or its last idle advance) and how much further stream time must move before
something of it closes, as the task reported after that batch. The rule:

- A task is *idle* once no record has reached it for ``idle_close_ms``; from then on its stream
  time follows the wall clock: an idle advance moves it by the wall-clock time elapsed since it
  was last anchored. So the final result of a window comes when continuing traffic would have
  brought it (never earlier), and at least ``idle_close_ms`` after the last record.
- A task is due when the advance it would get closes something: ``now >= anchored + max(wait,
  next_close)``, ``wait`` being ``idle_close_ms`` until the task is idle and 0 after. A task with
  nothing open is never due, so an idle application commits nothing.
- Only committed batches count: the caller reports a task's outcome once its batch committed.
  An advance lost to a crash is decided again, from the committed state, by the next run.
- Wall-clock time while the application is down does not count: a (re)started driver knows
  nothing of its tasks, so it anchors them all at its start and probes them once, ``idle_close_ms``
  later (a probe that closes nothing changes nothing and commits nothing). Records that arrived
  while it was down are thus never made late by the downtime.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from deltastreams.topology.graph import SubTopology, Topology
from deltastreams.topology.nodes import AggregateNode, SessionAggregateNode, SlidingAggregateNode, SuppressNode


def keeps_time(topology: Topology, sub: SubTopology) -> bool:
    """Whether idle close concerns the sub-topology: it holds an operator that closes windows or
    buffered results with stream time."""
    for name in sub.nodes:
        node = topology.nodes[name]
        if isinstance(node, (SessionAggregateNode, SlidingAggregateNode, SuppressNode)):
            return True
        if isinstance(node, AggregateNode) and node.windows is not None:
            return True
    return False


@dataclass
class _Task:
    anchored_ms: int
    """Wall-clock time the task's stream time was last anchored."""
    next_close_ms: int | None
    """Stream time still to pass before something of the task closes (None: nothing open)."""
    idle: bool
    """The last anchor was an idle advance (no threshold to wait for any more)."""


class IdleClock:
    """Which tasks are due for an idle advance, and by how much (thread-safe: the Spark driver's
    input watcher asks while triggers report)."""

    def __init__(self, idle_close_ms: int, tasks: Iterable[Hashable], now_ms: int) -> None:
        self.idle_close_ms = idle_close_ms
        self._lock = threading.Lock()
        self._tasks = {task: self._probe(now_ms) for task in tasks}

    @staticmethod
    def _probe(now_ms: int) -> _Task:
        """A task whose state the driver has not seen: due ``idle_close_ms`` from now."""
        return _Task(now_ms, 0, False)

    def restart(self, now_ms: int) -> None:
        """Forget everything, as a new driver would."""
        with self._lock:
            self._tasks = {task: self._probe(now_ms) for task in self._tasks}

    def _due_at(self, task: _Task) -> int | None:
        if task.next_close_ms is None:
            return None
        wait = 0 if task.idle else self.idle_close_ms
        return task.anchored_ms + max(wait, task.next_close_ms)

    def due(self, now_ms: int) -> dict[Hashable, int]:
        """The tasks due at ``now_ms``, each with its advance (wall-clock ms since anchored)."""
        with self._lock:
            return {
                key: now_ms - task.anchored_ms
                for key, task in self._tasks.items()
                if (at := self._due_at(task)) is not None and now_ms >= at
            }

    def any_due(self, now_ms: int) -> bool:
        return bool(self.due(now_ms))

    def committed(self, key: Hashable, wall_ms: int, *, processed: int, advanced: bool, next_close_ms: int | None) -> None:
        """A committed batch of task ``key``, planned at ``wall_ms``: it ``processed`` records,
        or ``advanced`` its stream time idly, or neither (a probe or an advance that closed
        nothing: only ``next_close_ms`` is news)."""
        with self._lock:
            task = self._tasks.get(key)
            if task is None:
                return
            if processed:
                self._tasks[key] = _Task(wall_ms, next_close_ms, False)
            elif advanced:
                self._tasks[key] = _Task(wall_ms, next_close_ms, True)
            else:
                task.next_close_ms = next_close_ms
