"""The application's Spark session, started on a thread of its own while the driver gets ready.

Embedded (no spark-submit, no session running, a local master: :func:`embedded_master`), the
JVM and its SparkSession take 5-15 s on this 2-core machine, and nothing the driver does first
needs them: its checks, the transaction logs' recovery, registration, the task hosts (started from
the driver in local mode, :func:`deltastreams.streams._internal.runtime.task_host.start_here`), and
triggers, whose tasks the driver calls on their hosts itself
(:meth:`deltastreams.streams._internal.spark.job.TriggerJob._run_in_driver`). So the session starts
meanwhile, and whatever needs it waits for it (:meth:`SessionStart.get`): the query, a sub-topology
read through Catalyst, a task that failed on its host.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable

from deltastreams.conf import StreamsConfig
from deltastreams.streams._internal.runtime import task_host
from deltastreams.streams._internal.spark.session import embedded_master

__all__ = ["SessionStart", "embedded_master", "prepare_task_hosts"]

log = logging.getLogger("deltastreams")


def prepare_task_hosts(config: StreamsConfig, *, log_file: str | None) -> None:
    """Spawn the task hosts' factory now, on a thread, if the application will run embedded (its
    hosts are then the driver's children): the factory's imports (the processing core, ~1 s)
    overlap whatever the driver does before its first trigger needs a host. Called again (the
    command line calls it before building the topology, the start calls it in any case), it finds
    the factory running."""
    if embedded_master(config) is not None:
        threading.Thread(target=task_host.prepare_here, kwargs={"log_file": log_file}, name="deltastreams-host-factory", daemon=True).start()


class SessionStart:
    """A session being started (or one given, ready at once)."""

    def __init__(self, start: Callable[[], object] | None, *, master: str, session=None) -> None:
        self.master = master
        """The master the session runs on (known before it runs: local mode decides what the
        driver may do without it)."""
        self.seconds = 0.0
        """How long the start took (0: given)."""
        self._session = session
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._abandoned = False
        self._lock = threading.Lock()
        self._other_jvms: set[int] | None = None
        """Gateway JVMs this process had before this start launched its own (never killed by
        :meth:`end`); None until the start's thread has looked."""
        if start is None:
            self._done.set()
            return
        self._started = time.perf_counter()
        threading.Thread(target=self._run, args=(start,), name="deltastreams-spark-session", daemon=True).start()

    @classmethod
    def given(cls, session) -> SessionStart:
        return cls(None, master=session.sparkContext.master, session=session)

    def _run(self, start: Callable[[], object]) -> None:
        with self._lock:
            if self._abandoned:  # before it began: nothing to start
                self._done.set()
                return
            self._other_jvms = set(_launching_jvms())
        try:
            session = start()
        except BaseException as e:  # noqa: BLE001 - raised again in the thread that asks for the session
            self._error = e
            session = None
        finally:
            self.seconds = time.perf_counter() - self._started
        with self._lock:
            self._session = session
            self._done.set()

    def abandon(self) -> None:
        """The application finished before the session was up (a run until caught up whose
        input the driver's own triggers consumed meanwhile) and will not ask for it. A start
        not yet begun never begins; one under way goes on (a session then up is the process's
        active one, as any other) unless :meth:`end` ends it."""
        with self._lock:
            self._abandoned = True

    def end(self, *, kill_launch: bool) -> None:
        """End the session this start started or is starting (the application's
        ``close_spark``): stop it once up. ``kill_launch`` (the process is about to exit): a JVM
        still being launched is killed rather than waited for, so it does not boot for nothing
        after the process is gone (PySpark's JVM exits on its closed pipe only once booted,
        taking a core for a second or two). Not otherwise: PySpark would be left pointing at a
        dead JVM."""
        with self._lock:
            if not self._done.is_set() and kill_launch:
                launched = set(_launching_jvms()) - self._other_jvms if self._other_jvms is not None else set()
                for pid in launched:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass  # it exited meanwhile
                return
        self._done.wait()
        if self._session is not None:
            _stop_quietly(self._session)

    @property
    def local(self) -> bool:
        return self.master.startswith("local")

    def ready(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for the start to end; returns whether it has."""
        return self._done.wait(timeout_s)

    def get(self):
        """The session, once started (the start's error if it failed)."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._session


def _launching_jvms() -> list[int]:
    """This process's children that are PySpark's gateway JVM (``spark-submit``, which execs
    ``java ... SparkSubmit``)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except (OSError, ValueError, IndexError):
            continue  # gone, or not ours to read
        if b"spark-submit" in command or b"org.apache.spark.deploy.SparkSubmit" in command:
            found.append(int(entry))
    return found


def _stop_quietly(session) -> None:
    try:
        session.stop()
    except Exception:  # noqa: BLE001 - nobody uses it; the process may be exiting
        log.debug("stopping an abandoned Spark session failed", exc_info=True)
