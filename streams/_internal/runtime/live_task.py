"""A task's operators kept alive across micro-batches, as Kafka keeps a task's processors.

Kafka builds a task's processors once, calls ``init`` once, and keeps them while the task commits
batch after batch; it closes them only when the task is closed (revoked, fenced, a failure) and a
new incarnation starts from the stores. Here a task's operators (user processors included) live
in its task host (:mod:`deltastreams.streams._internal.runtime.task_host`), next to the stores
they are built over, for as long as every batch they process commits.

In-memory state of an operator after a batch (a processor's fields, its punctuation schedules, an
operator's caches) is right only if that batch committed: an abandoned batch leaves the stores at
the previous commit and the operators ahead of them. So each run that processes records gets a
fresh **run id**, reported to the driver in the task's outcome; the driver keeps, per task, the
run id of the last outcome it committed and passes it in the next plan (``TaskPlan.committed_run``).
The live operators are reused only when that is the run that last changed them, and the stores
moved since only by promoting that run's own changes (:attr:`deltastreams.state.TaskStores.continuous`).
Anything else (the batch was abandoned or failed, a newer instance fenced this one, the task ran
on another machine meanwhile, a new driver that knows no committed run yet, a store rebuilt) closes
them (``close``) and builds them again from the stores (``init`` again), as Kafka does.

A run id says which state the operators hold, not which batch ran: a run that processes nothing
(no records for the task, a merge-only stage) leaves them as they were and reports the same id.
The cache knows nothing of operator kinds: it keeps whatever :class:`TaskProcessor` the topology
builds.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from deltastreams.streams._internal.processing.task import TaskProcessor

log = logging.getLogger("deltastreams")


@dataclass
class _Live:
    key: Hashable
    processor: TaskProcessor
    run: str | None
    """The run whose results the operators hold (None: a run under way, or one that failed)."""


class LiveTask:
    """The operators of one task, kept from one committed batch to the next."""

    def __init__(self) -> None:
        self._live: _Live | None = None
        self.builds = 0
        """How many times the operators were built (``init`` ran) in this process."""
        self.reuses = 0
        """How many batches ran on operators kept from the batch before."""

    def begin(self, key: Hashable, committed_run: str | None, build: Callable[[], TaskProcessor]) -> TaskProcessor:
        """The operators for a batch that processes records: the live ones if they hold exactly
        the committed run ``committed_run`` and were built for ``key`` (the topology, settings and
        changelog incarnations), else new ones from ``build`` (the old ones closed first). Until
        :meth:`done`, they count as holding no committed run."""
        live = self._live
        if live is not None and live.key == key and committed_run is not None and live.run == committed_run:
            live.run = None
            self.reuses += 1
            return live.processor
        self.discard()
        processor = build()
        self.builds += 1
        self._live = _Live(key, processor, None)
        return processor

    def done(self) -> str:
        """The batch begun last processed successfully: a new run id, which the driver reports
        back as committed if it commits the batch."""
        assert self._live is not None, "done() without begin()"
        self._live.run = uuid.uuid4().hex
        return self._live.run

    def unchanged(self, committed_run: str | None) -> str | None:
        """A run that processed nothing: the run id the operators still hold, if it is the
        committed one (None otherwise: the next batch builds them again)."""
        live = self._live
        if live is not None and committed_run is not None and live.run == committed_run:
            return live.run
        return None

    def discard(self) -> None:
        """Close the operators (Kafka's ``close``); the next batch builds new ones."""
        live, self._live = self._live, None
        if live is None:
            return
        try:
            live.processor.close()
        except Exception:  # noqa: BLE001 - as Kafka: a failing close is logged, the task still starts over
            log.warning("task %s: closing its processors failed", live.processor.task_id, exc_info=True)
