"""A real Spark standalone cluster on this machine, from the pyspark package alone: a master and
workers, each its own JVM started with ``spark-class``, on loopback.

Every port is chosen by the process that binds it (``--port 0``) and read back from its log, so
two clusters (or a cluster and anything else) cannot collide. Used by the cluster test and by
hand::

    python -m deltastreams.devtools.servers.standalone_cluster --workers 2      # prints the master URL; Ctrl-C stops it

The master's log says ``Launching executor ... on worker ...`` when an application really runs
there; each executor logs to ``<work_dir>/<app id>/<executor id>/stderr``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

MASTER_URL_LINE = re.compile(r"Starting Spark master at (spark://\S+)")
WORKER_REGISTERED_LINE = re.compile(r"Successfully registered with master")
_START_TIMEOUT_S = 90.0


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def spark_class(main_class: str, arguments: list[str]) -> list[str]:
    """The command that runs one of Spark's daemons (``...deploy.master.Master``, ``...Worker``)."""
    return [os.path.join(spark_home(), "bin", "spark-class"), main_class, *arguments]


def cluster_environment(python: str = sys.executable) -> dict[str, str]:
    """What every process of the cluster and its applications needs: loopback only, and the
    Python that has the project installed for the executors' workers."""
    return {
        **os.environ,
        "SPARK_HOME": spark_home(),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_HOST": "127.0.0.1",
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
    }


@dataclass
class StandaloneCluster:
    """A master and ``workers`` one-core workers under ``directory`` (logs, work dirs)."""

    directory: Path
    workers: int = 2
    worker_memory: str = "2g"
    master_url: str = ""
    _processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_log(self) -> Path:
        return self.directory / "master.log"

    def worker_dir(self, index: int) -> Path:
        return self.directory / f"worker-{index}"

    def start(self) -> StandaloneCluster:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._spawn("org.apache.spark.deploy.master.Master", ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"], self.master_log)
        self.master_url = wait_for_line(self.master_log, MASTER_URL_LINE, self._processes[0]).group(1)
        for index in range(self.workers):
            work_dir = self.worker_dir(index)
            work_dir.mkdir(exist_ok=True)
            arguments = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "1", "--memory", self.worker_memory]
            self._spawn("org.apache.spark.deploy.worker.Worker", [*arguments, "--work-dir", str(work_dir), self.master_url], work_dir / "worker.log")
        for index in range(self.workers):
            wait_for_line(self.worker_dir(index) / "worker.log", WORKER_REGISTERED_LINE, self._processes[index + 1])
        return self

    def _spawn(self, main_class: str, arguments: list[str], log: Path) -> None:
        command = spark_class(main_class, arguments)
        with open(log, "wb") as out:
            # A process group of its own: stopping the cluster ends the JVM and anything it started.
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=cluster_environment(), start_new_session=True)
        self._processes.append(process)

    def executor_logs(self) -> list[Path]:
        """The stderr file of every executor any worker launched."""
        return sorted(path for index in range(self.workers) for path in self.worker_dir(index).glob("app-*/*/stderr"))

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def wait_for_line(log: Path, pattern: re.Pattern, process: subprocess.Popen) -> re.Match:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        match = pattern.search(log.read_text(errors="replace")) if log.exists() else None
        if match:
            return match
        if process.poll() is not None:
            raise RuntimeError(f"{log.name}: the process exited with {process.returncode} before it was ready; see {log}")
        time.sleep(0.2)
    raise TimeoutError(f"{log.name}: not ready after {_START_TIMEOUT_S:.0f} s; see {log}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.servers.standalone_cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="2g")
    parser.add_argument("--dir", help="logs and work directories (default: a new temporary directory)")
    args = parser.parse_args(argv)
    directory = Path(args.dir or tempfile.mkdtemp(prefix="deltastreams-cluster-"))
    # SIGTERM stops it as Ctrl-C does, whenever it comes (even during start-up or the print): the
    # master and workers are JVMs of their own, which a Python process ended by the default
    # action, or by an exception raised outside the clean-up, would leave running.
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    cluster = StandaloneCluster(directory, args.workers, args.worker_memory)
    try:
        cluster.start()
        print(f"master {cluster.master_url}; logs and work directories in {directory}; Ctrl-C or SIGTERM stops it", flush=True)
        while not stopped.wait(0.2):
            pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
