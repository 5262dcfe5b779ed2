"""The application's lifecycle state, as Kafka Streams' ``KafkaStreams.State``: what the metrics
endpoint reports as ``deltastreams_application_state`` and what :class:`deltastreams.streams.app.StreamsApp`
exposes as ``state``."""

from __future__ import annotations

import logging
import threading
from enum import Enum

log = logging.getLogger("deltastreams")


class AppState(Enum):
    CREATED = "CREATED"
    """Built, not started."""
    REBALANCING = "REBALANCING"
    """Starting: checking topics, recovering transactions, registering tasks, starting the query
    (Kafka's state while tasks are assigned and their stores restored)."""
    RUNNING = "RUNNING"
    """The query runs and commits batches."""
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    """Stopping: the batch in flight finishes, the query and the task hosts stop."""
    NOT_RUNNING = "NOT_RUNNING"
    """Stopped cleanly."""
    PENDING_ERROR = "PENDING_ERROR"
    """A batch failed (or the start did): stopping."""
    ERROR = "ERROR"
    """Stopped after a failure."""


_NEXT: dict[AppState, frozenset[AppState]] = {
    AppState.CREATED: frozenset({AppState.REBALANCING, AppState.PENDING_SHUTDOWN, AppState.PENDING_ERROR}),
    AppState.REBALANCING: frozenset({AppState.RUNNING, AppState.PENDING_SHUTDOWN, AppState.PENDING_ERROR}),
    AppState.RUNNING: frozenset({AppState.REBALANCING, AppState.PENDING_SHUTDOWN, AppState.PENDING_ERROR}),
    AppState.PENDING_SHUTDOWN: frozenset({AppState.NOT_RUNNING}),
    # Unlike a closed KafkaStreams instance, a stopped application may be started again.
    AppState.NOT_RUNNING: frozenset({AppState.REBALANCING}),
    AppState.PENDING_ERROR: frozenset({AppState.ERROR}),
    AppState.ERROR: frozenset({AppState.REBALANCING}),
}


class Lifecycle:
    """The current state, changed only along Kafka's transitions (a stop requested while already
    stopping, or a failure reported twice, is a no-op, not an error)."""

    def __init__(self) -> None:
        self._state = AppState.CREATED
        self._lock = threading.Lock()

    @property
    def state(self) -> AppState:
        return self._state

    def to(self, state: AppState) -> bool:
        """Move to ``state`` if Kafka's table allows it from the current one; returns whether it moved."""
        with self._lock:
            if state not in _NEXT[self._state]:
                log.debug("application state stays %s (no transition to %s)", self._state.value, state.value)
                return False
            log.debug("application state %s -> %s", self._state.value, state.value)
            self._state = state
            return True
