"""SIGTERM and SIGINT stop a job cleanly: between micro-batches, or after the append in progress.

Left alone, SIGTERM ends a Python process at once (a crash, as far as the job is concerned) and
SIGINT runs PySpark's handler, which cancels every Spark job, the micro-batch in flight included,
before raising ``KeyboardInterrupt``. :class:`StopOnSignal` replaces both for a running
:class:`deltastreams.streams.StreamsApp`: it raises :class:`StopSignal` in the main thread, which leaves
``StreamsApp.run`` through its ``finally: stop()`` (no new batch starts, the running one finishes
and is recorded). The exception is raised only where the main thread is outside Py4J and PySpark
code, since an exception in the middle of a Py4J call would leave the gateway connection waiting
for a reply nobody reads; elsewhere it is retried every 50 ms. A signal while ``stop()`` already
runs, or a second signal, is ignored.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

log = logging.getLogger("deltastreams")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_RETRY_S = 0.05
_UNSAFE_MODULES = ("py4j", "pyspark")


class StopSignal(BaseException):
    """Raised in the main thread to leave ``StreamsApp.run`` through its clean stop. A
    ``BaseException``, like ``KeyboardInterrupt``, so that no ``except Exception`` swallows it."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@contextmanager
def calling_on_stop_signals(callback: Callable[[str], None]) -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT call ``callback(signal name)`` instead of ending the
    process (for loops that poll a flag, like the steady generator)."""
    previous = {s: signal.signal(s, lambda signum, frame: callback(signal.Signals(signum).name)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class StopOnSignal:
    """Install before ``StreamsApp.start()`` (so a signal during the start-up is kept), again after
    it (PySpark's SparkContext installs its own SIGINT handler), then :meth:`arm` just before
    ``run()`` and :meth:`disarm` after it."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._armed = False

    def install(self) -> None:
        for s in STOP_SIGNALS:
            signal.signal(s, self._on_signal)
        signal.signal(signal.SIGALRM, self._retry)

    def arm(self) -> bool:
        """From now on a signal raises :class:`StopSignal`; returns whether one came already
        (then the caller stops the application itself)."""
        self._armed = True
        return self.received is not None

    def disarm(self) -> None:
        """Once ``run()`` returned: a late signal is only recorded."""
        self._armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            return
        self.received = signal.Signals(signum).name
        log.info("%s received: stopping between micro-batches", self.received)
        self._deliver(frame)

    def _retry(self, signum: int, frame: FrameType | None) -> None:
        self._deliver(frame)

    def _deliver(self, frame: FrameType | None) -> None:
        if not self._armed:
            return
        modules = []
        while frame is not None:
            modules.append((frame.f_globals.get("__name__", ""), frame.f_code.co_name))
            frame = frame.f_back
        if any(module == "deltastreams.streams.app" and function == "stop" for module, function in modules):
            return  # the application is stopping already
        if any(module.split(".")[0] in _UNSAFE_MODULES for module, _ in modules):
            signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
            return
        raise StopSignal(self.received)
