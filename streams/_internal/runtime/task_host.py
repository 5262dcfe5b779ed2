"""Task hosts: one long-lived process per task on each machine that runs it, holding its stores.

Spark hands a task to whichever of its Python workers is free, so state kept in a worker would be
found again only by chance. A task host is a process of its own per (state directory, application,
task), started by the first Spark task that needs it (in local mode, by the driver as it starts:
:func:`start_here`) and found again by every later one on that machine through a Unix socket
with a name derived from those three (Linux abstract namespace: no file to clean up, no
path-length limit). It keeps the task's RocksDB stores open and its last
batch's changes in memory (:class:`deltastreams.streams._internal.runtime.task.TaskExecutor`), so a batch
neither reopens a store nor reads its own changelog back. Batches reach it one at a time.

Hosts are forked by a *host factory*, one per executor, that has imported the processing code
once (as Spark's Python daemon forks its workers): a new host is ready in milliseconds instead of
the ~0.7 s its imports take.

A host ends when idle for ``idle_timeout_s``, when the executor (the JVM) it served is gone, when
Spark's Python daemon shuts its process group down (SIGHUP), or when asked (``stop_hosts``). It
holds no state that matters: losing it costs only the next batch a catch-up from the changelog.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterable

from deltastreams.conf.errors import DeltaStreamsError

log = logging.getLogger("deltastreams")

_FRAME = struct.Struct(">Q")
_SPAWN_WAIT_S = 60.0


class TaskHostError(DeltaStreamsError):
    """A task failed in its task host; the message carries the original error's type and text."""


class HostNotRunning(Exception):
    """No task host serves this name on this machine (asked not to start one)."""


def host_name(state_dir: str, application_id: str, task_id: str) -> str:
    digest = hashlib.sha1(f"{os.path.abspath(state_dir)}\0{application_id}\0{task_id}".encode()).hexdigest()
    return f"deltastreams-task-{digest}"


def _address(name: str) -> str:
    return "\0" + name


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_FRAME.pack(len(payload)) + payload)


def _receive(sock: socket.socket) -> bytes:
    header = _read_exactly(sock, _FRAME.size)
    return _read_exactly(sock, _FRAME.unpack(header)[0])


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("task host closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# -- the client side (a Spark task, or the driver stopping hosts) ---------------------------------


def _connect(name: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(_address(name))
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        return None
    return sock


def executor_pid() -> int:
    """The JVM this Python worker serves: the parent of Spark's Python daemon (our parent)."""
    try:
        with open(f"/proc/{os.getppid()}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _factory_name(executor_pid: int) -> str:
    return f"deltastreams-host-factory-{os.getuid()}-{executor_pid}"


def _spawn_factory(watch_pid: int, *, from_driver: bool = False, log_file: str | None = None) -> None:
    command = [sys.executable, "-m", "deltastreams.streams._internal.runtime.task_host", "--factory", "--watch-pid", str(watch_pid)]
    # It forks its hosts after importing NumPy: no BLAS thread pool may exist by then.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if from_driver:
        # The driver's child (tools find a job's processes by descent), writing to the job's log
        # file, deaf to the terminal's Ctrl-C as PySpark's JVM is: the driver stops between
        # batches on it, and a host must finish the batch it runs.
        global _driver_factory
        if log_file:  # before the application's logging has made its folder, when spawned early
            os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        output = open(log_file, "ab") if log_file else None  # noqa: SIM115 - the child keeps its own copy
        try:
            _driver_factory = subprocess.Popen([*command, "--ignore-sigint"], stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env, close_fds=True)
        finally:
            if output is not None:
                output.close()
        return
    # Detached through an intermediate process that exits at once, so the factory is not a child
    # of a Python worker that never reaps it; it stays in Spark's process group on purpose (the
    # daemon's SIGHUP at shutdown ends it and its hosts).
    launcher = f"import subprocess; subprocess.Popen({command!r}, stdin=subprocess.DEVNULL, close_fds=True)"
    subprocess.run([sys.executable, "-c", launcher], check=True, stdin=subprocess.DEVNULL, env=env)


_driver_factory: subprocess.Popen | None = None
"""The factory this process spawned as a driver (kept: a child is reaped through its Popen)."""


def _wait_for(name: str, what: str) -> socket.socket:
    deadline = time.monotonic() + _SPAWN_WAIT_S
    while True:
        sock = _connect(name)
        if sock is not None:
            return sock
        if time.monotonic() > deadline:
            raise TaskHostError(f"{what} {name} did not start within {_SPAWN_WAIT_S:.0f} s")
        time.sleep(0.005)


def _start_host(name: str, idle_timeout_s: float) -> None:
    executor = executor_pid()
    with _factory(executor) as factory:
        _send(factory, pickle.dumps((name, idle_timeout_s)))
        _receive(factory)


def _factory(watch_pid: int, *, from_driver: bool = False, log_file: str | None = None) -> socket.socket:
    """A connection to the host factory that watches ``watch_pid``, spawned if there is none."""
    factory = _connect(_factory_name(watch_pid))
    if factory is not None:
        return factory
    with _spawning:  # a second thread of this process waits for the first one's factory
        factory = _connect(_factory_name(watch_pid))
        if factory is None:
            _spawn_factory(watch_pid, from_driver=from_driver, log_file=log_file)
            factory = _wait_for(_factory_name(watch_pid), "task host factory")
    return factory


_spawning = threading.Lock()


def prepare_here(*, log_file: str | None = None) -> None:
    """Spawn the host factory :func:`start_here` uses, unless it runs: its imports (the
    processing core, ~1 s) then overlap whatever the driver does before it needs a host. (It
    listens before it imports: this returns once it listens.)"""
    _factory(os.getpid(), from_driver=True, log_file=log_file).close()


def start_here(names: Iterable[str], idle_timeout_s: float, *, log_file: str | None = None) -> None:
    """Start the task hosts ``names`` from the driver, in local mode (where the driver's machine is
    the executor's): the first trigger then finds them ready without waiting for Spark
    (:mod:`deltastreams.streams._internal.spark.session_start`). They watch this process, as a
    Spark task's hosts watch its executor's JVM, and write to ``log_file``. Hosts already running
    are left as they are; Spark tasks find these by name as they would their own."""
    names = [name for name in names if not _serving(name)]
    if not names:
        return
    for name in names:
        with _factory(os.getpid(), from_driver=True, log_file=log_file) as factory:
            _send(factory, pickle.dumps((name, idle_timeout_s)))
            _receive(factory)


def _serving(name: str) -> bool:
    """Whether a host serves ``name`` (asked without sending it anything)."""
    sock = _connect(name)
    if sock is None:
        return False
    sock.close()
    return True


def call(name: str, request: object, *, idle_timeout_s: float, start: bool = True) -> object:
    """Send one request to the task host ``name`` (starting it if needed, unless ``start`` is
    false: then :class:`HostNotRunning`); returns its reply."""
    sock = _connect(name)
    if sock is None:
        if not start:  # only a Spark task may start one: hosts serve (and watch) its executor
            raise HostNotRunning(name)
        _start_host(name, idle_timeout_s)
        sock = _wait_for(name, "task host")
    with sock:
        _send(sock, pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
        ok, reply = pickle.loads(_receive(sock))
    if not ok:
        raise TaskHostError(reply)
    return reply


def stop_hosts(names: Iterable[str]) -> int:
    """Ask task hosts on this machine to exit; returns how many did. Each has closed its stores
    when this returns."""
    stopped = 0
    for name in names:
        sock = _connect(name)
        if sock is None:
            continue
        try:
            with sock:
                _send(sock, pickle.dumps(("stop", None)))
                _receive(sock)
            stopped += 1
        except OSError:
            continue
    return stopped


# -- the host process -----------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _listen(name: str) -> socket.socket | None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(_address(name))
    except OSError:
        listener.close()
        return None  # another process serves this name already
    listener.listen(16)
    return listener


def factory(watch_pid: int) -> None:
    """Import once, then fork one task host per request; ends with the executor."""
    listener = _listen(_factory_name(watch_pid))
    if listener is None:
        return
    import deltastreams.streams._internal.runtime.task  # noqa: F401 - the imports every host needs, paid once
    from pyarrow import acero  # noqa: F401 - expression projections; the processing core imports it lazily for the driver's sake
    from pyspark import cloudpickle  # noqa: F401 - unpickles the shipped topology

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # hosts are reaped by the kernel
    listener.settimeout(1.0)
    with listener:
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                if not _alive(watch_pid):
                    return
                continue
            with connection:
                try:
                    name, idle_timeout_s = pickle.loads(_receive(connection))
                except (ConnectionError, EOFError, pickle.UnpicklingError):
                    continue
                host = _listen(name)  # bound before the fork: no client can miss it
                if host is not None and os.fork() == 0:
                    listener.close()
                    connection.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    try:
                        serve(host, name, idle_timeout_s, watch_pid)
                    finally:
                        os._exit(0)
                if host is not None:
                    host.close()
                _send(connection, pickle.dumps((True, None)))


def _run(executor, plan, task, staged, records):
    """One batch; profiled into ``$DELTASTREAMS_TASK_PROFILE/<task>-<batch>.prof`` if that is set
    (a directory): where a task's time goes, for ``python -m pstats``."""
    target = os.environ.get("DELTASTREAMS_TASK_PROFILE")
    if not target:
        return executor.run(plan, task, staged, records)
    import cProfile

    profiler = cProfile.Profile()
    try:
        return profiler.runcall(executor.run, plan, task, staged, records)
    finally:
        os.makedirs(target, exist_ok=True)
        profiler.dump_stats(os.path.join(target, f"{task.task_id}-{plan.batch_id}.prof"))


def serve(listener: socket.socket, name: str, idle_timeout_s: float, watch_pid: int) -> None:
    from deltastreams.streams._internal.runtime.task import TaskExecutor

    listener.settimeout(1.0)
    executor: TaskExecutor | None = None
    last_request = time.monotonic()
    try:
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last_request > idle_timeout_s or not _alive(watch_pid):
                    return
                continue
            last_request = time.monotonic()
            with connection:
                try:
                    kind, payload = pickle.loads(_receive(connection))
                except (ConnectionError, EOFError, pickle.UnpicklingError):
                    continue
                if kind == "stop":  # close the stores first: the caller may delete them next
                    if executor is not None:
                        executor.close()
                        executor = None
                    _send(connection, pickle.dumps((True, None)))
                    return
                try:
                    if kind == "ping":  # warm-up: the topology unpickled, the imports done
                        payload.load()
                        _send(connection, pickle.dumps((True, None)))
                        continue
                    if kind == "standby":  # a warm copy: catch the stores up, process nothing
                        settings, task_id, positions = payload
                        if executor is None:
                            executor = TaskExecutor(settings.local_state_dir(), settings.application_id, task_id)
                        _send(connection, pickle.dumps((True, executor.catch_up(settings, positions))))
                        continue
                    plan, task, staged, records = payload
                    if executor is None:
                        executor = TaskExecutor(plan.settings.local_state_dir(), plan.settings.application_id, task.task_id)
                    reply = (True, _run(executor, plan, task, staged, records).to_json())
                except Exception as e:  # noqa: BLE001 - reported to the Spark task, which fails
                    reply = (False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
                try:
                    _send(connection, pickle.dumps(reply))
                except OSError:
                    log.warning("task host %s: the Spark task went away before its reply", name)
    finally:
        if executor is not None:
            executor.close()
        listener.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="deltastreams task host factory (started by Spark tasks)")
    parser.add_argument("--factory", action="store_true", required=True)
    parser.add_argument("--watch-pid", type=int, default=0)
    parser.add_argument("--ignore-sigint", action="store_true", help="started by a driver: its terminal's Ctrl-C is the driver's to handle")
    args = parser.parse_args(argv)
    if args.ignore_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s task-host %(message)s")
    factory(args.watch_pid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
