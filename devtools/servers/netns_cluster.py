"""A test cluster of several hosts on one machine: every host in a network namespace of its own
(``ip netns``), with its own address, its own local directories and its own processes.

    python -m deltastreams.devtools.servers.netns_cluster up [--dir D] [--workers 3]   # starts it, prints the state, returns
    python -m deltastreams.devtools.servers.netns_cluster status [--dir D]
    python -m deltastreams.devtools.servers.netns_cluster kill-host N [--dir D] [--cut-link]   # N: a worker (1..3), or driver|master|s3
    python -m deltastreams.devtools.servers.netns_cluster down [--dir D]

The hosts (``<id>`` is a short random suffix, so two clusters can coexist on one machine):

=============  ==========================  ===================================================
host           namespace / address         runs
=============  ==========================  ===================================================
(root)         bridge ``dstc<id>``, ``.1``  nothing: the machine's own namespace, on the bridge
``s3``         ``dstc-<id>-s3``, ``.2``     the object store (SeaweedFS, deltastreams.devtools.servers.s3_server)
``master``     ``dstc-<id>-master``, ``.3`` the Spark standalone master (port 7077, UI 8080)
``driver``     ``dstc-<id>-driver``, ``.4`` whatever :meth:`MultiHostCluster.on_driver` runs
``worker-N``   ``dstc-<id>-wN``, ``.10+N``  a one-core Spark worker (and, later, its executors)
=============  ==========================  ===================================================

The addresses are on a private /24 (``10.x.y.0``, chosen at random among those no route of the
machine uses); each namespace has ``lo`` and one end of a veth pair (``eth0``) whose other end
(``dstc<id><h>``) is a port of the bridge. There is no default route: a host reaches the other
hosts, the root namespace (on the bridge address) and its own loopback, nothing else.

Every host has a directory ``<dir>/<host>/`` with ``tmp/`` (its ``TMPDIR``: executors inherit it,
so a default resolved with ``tempfile.gettempdir()`` on a worker lands on that worker's disk),
``work/`` (the worker's work directory: executor logs under ``app-*/*/stderr``) and its log.
``<dir>/cluster.json`` is the state (names, addresses, pids, master URL, S3 endpoint), written
before anything is created, so ``down`` from any process, even after a failed ``up``, removes
everything: it kills every process in the cluster's namespaces (``ip netns pids``), deletes the
namespaces (their veth ends go with them), then any veth and the bridge left. The directory is
kept (logs); a ``--dir`` is not needed when there is one cluster: the last ``up`` is remembered
in ``$TMPDIR/deltastreams-test-cluster.last``.

Linux only, as root (or with CAP_NET_ADMIN and CAP_SYS_ADMIN): :class:`NamespacesUnavailable`
says why it cannot run, for the tests to skip on.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from deltastreams.conf import storage
from deltastreams.devtools.servers import s3_server
from deltastreams.devtools.servers.s3_server import S3Server
from deltastreams.devtools.servers.standalone_cluster import MASTER_URL_LINE, WORKER_REGISTERED_LINE, spark_class, spark_home, wait_for_line

PREFIX = "dstc"
MASTER_PORT, MASTER_UI_PORT, WORKER_UI_PORT = 7077, 8080, 8081
STATE_FILE = "cluster.json"
_LAST = Path(tempfile.gettempdir()) / "deltastreams-test-cluster.last"


class NamespacesUnavailable(RuntimeError):
    """Network namespaces cannot be created here (not Linux, not privileged, no ``ip``)."""


@dataclass
class Host:
    name: str  # "s3", "master", "driver", "worker-1", ...
    namespace: str
    veth: str  # the root namespace's end of its veth pair (a bridge port)
    address: str
    directory: str
    pids: list[int] = field(default_factory=list)

    @property
    def tmpdir(self) -> str:
        return str(Path(self.directory) / "tmp")

    @property
    def work_dir(self) -> str:
        return str(Path(self.directory) / "work")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def namespaces_unavailable() -> str | None:
    """Why network namespaces cannot be created here, or None if they can (tried: one is created
    and deleted)."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux only (this is {sys.platform})"
    if shutil.which("ip") is None:
        return "no 'ip' command (iproute2)"
    probe = f"{PREFIX}-probe-{secrets.token_hex(3)}"
    created = _ip("netns", "add", probe, check=False)
    if created.returncode != 0:
        return f"'ip netns add' was refused: {created.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def netns_pids(namespace: str) -> list[int]:
    result = _ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in result.stdout.split()] if result.returncode == 0 else []


def _free_subnet() -> ipaddress.IPv4Network:
    used = []
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines() + _ip("-4", "route", "show").stdout.splitlines():
        for word in line.split():
            try:
                used.append(ipaddress.ip_network(word, strict=False))
            except ValueError:
                continue
    for _ in range(200):
        candidate = ipaddress.ip_network(f"10.{random.randint(200, 254)}.{random.randint(0, 255)}.0/24")
        if not any(candidate.overlaps(network) for network in used if network.prefixlen > 0):
            return candidate
    raise RuntimeError("no free private /24 for a test cluster")


@dataclass
class MultiHostCluster:
    """A cluster of hosts in network namespaces under ``directory`` (see the module docstring).

    ``with MultiHostCluster(directory, workers=3) as cluster: ...`` brings it up and always takes
    it down; :meth:`load` attaches to one another process brought up (``down``, ``kill_host``)."""

    __test__ = False  # not a pytest test class

    directory: Path
    workers: int = 3
    worker_memory: str = "1500m"
    python: str = sys.executable
    cluster_id: str = ""
    subnet: str = ""
    bridge: str = ""
    hosts: dict[str, Host] = field(default_factory=dict)
    master_url: str = ""
    s3_port: int = 0
    bucket: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    _processes: list[subprocess.Popen] = field(default_factory=list, repr=False)
    _s3: S3Server | None = field(default=None, repr=False)

    # ----------------------------------------------------------------------------------- naming

    def __post_init__(self) -> None:
        self.directory = Path(self.directory).absolute()

    def _plan(self) -> None:
        self.cluster_id = secrets.token_hex(3)[:5]
        network = _free_subnet()
        self.subnet = str(network)
        self.bridge = f"{PREFIX}{self.cluster_id}"  # 9 characters: interface names are at most 15
        base = network.network_address
        plan = [("s3", "s3", "s", 2), ("master", "master", "m", 3), ("driver", "driver", "d", 4)]
        plan += [(f"worker-{n}", f"w{n}", str(n), 10 + n) for n in range(1, self.workers + 1)]
        for name, short, letter, last in plan:
            self.hosts[name] = Host(
                name=name, namespace=f"{PREFIX}-{self.cluster_id}-{short}", veth=f"{self.bridge}{letter}", address=str(base + last), directory=str(self.directory / name)
            )

    def worker(self, n: int) -> Host:
        return self.hosts[f"worker-{n}"]

    @property
    def worker_hosts(self) -> list[Host]:
        return [host for name, host in sorted(self.hosts.items()) if name.startswith("worker-")]

    @property
    def bridge_address(self) -> str:
        return str(ipaddress.ip_network(self.subnet).network_address + 1)

    @property
    def master_log(self) -> Path:
        return Path(self.hosts["master"].directory) / "master.log"

    @property
    def master_ui(self) -> str:
        return f"http://{self.hosts['master'].address}:{MASTER_UI_PORT}"

    def worker_log(self, n: int) -> Path:
        return Path(self.worker(n).directory) / "worker.log"

    def executor_logs(self) -> list[Path]:
        """The stderr file of every executor any worker launched."""
        return sorted(path for host in self.worker_hosts for path in Path(host.work_dir).glob("app-*/*/stderr"))

    # ----------------------------------------------------------------------------------- the store

    @property
    def s3_endpoint(self) -> str:
        return f"http://{self.hosts['s3'].address}:{self.s3_port}"

    @property
    def storage_options(self) -> dict[str, str]:
        return s3_server.storage_options_for(self.s3_endpoint)

    def uri(self, *parts: str) -> str:
        return "/".join([f"s3://{self.bucket}", *parts])

    # ------------------------------------------------------------------------------ environments

    def environment(self, host: Host) -> dict[str, str]:
        """A process on ``host``: its address for Spark, its own TMPDIR, the project's Python (and
        this process's PYTHONPATH, so executors import the same checkout); no storage options from
        the environment (an application is given them)."""
        environment = {k: v for k, v in os.environ.items() if k not in storage.ENVIRONMENT}
        environment.update({
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": host.address,
            "SPARK_LOCAL_HOSTNAME": host.address,
            "SPARK_MASTER_HOST": self.hosts["master"].address if "master" in self.hosts else host.address,
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
            "TMPDIR": host.tmpdir,
            "SPARK_LOCAL_DIRS": str(Path(host.tmpdir) / "spark"),
            "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={host.tmpdir}",
        })  # fmt: skip
        return environment

    def on(self, host: str | Host) -> list[str]:
        """The command prefix that runs a command on ``host`` (``ip netns exec <namespace>``)."""
        host = self.hosts[host] if isinstance(host, str) else host
        return ["ip", "netns", "exec", host.namespace]

    def on_driver(self, command: list[str]) -> list[str]:
        return [*self.on("driver"), *command]

    def driver_environment(self) -> dict[str, str]:
        return self.environment(self.hosts["driver"])

    def run_on_driver(self, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        """``subprocess.run`` of ``command`` on the driver host with the driver's environment
        (``env`` in ``kwargs`` is added to it)."""
        environment = {**self.driver_environment(), **kwargs.pop("env", {})}
        return subprocess.run(self.on_driver(command), env=environment, **kwargs)

    # ------------------------------------------------------------------------------------- up

    def up(self) -> MultiHostCluster:
        """Creates the network, starts the store, the master and the workers, and waits until every
        worker has registered. On any failure everything created is removed before it raises."""
        reason = namespaces_unavailable()
        if reason:
            raise NamespacesUnavailable(reason)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._plan()
        self.save()  # first, so that a `down` finds whatever a failure leaves
        _LAST.write_text(str(self.directory))
        started, store = time.monotonic(), None
        try:
            self._create_network()
            self.timings["network_s"] = round(time.monotonic() - started, 1)
            # The store comes up (about a second, more on a busy machine) while the JVMs start.
            store = _Background(self._start_store)
            self._start_spark()
            self.timings["spark_s"] = round(time.monotonic() - started, 1)
            store.result()
        except BaseException:
            if store is not None:
                store.join(60)  # not to start a process in a namespace being removed
            self.down()
            raise
        self.timings["up_s"] = round(time.monotonic() - started, 1)
        self.save()
        return self

    def _create_network(self) -> None:
        prefix = ipaddress.ip_network(self.subnet).prefixlen
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.bridge_address}/{prefix}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for host in self.hosts.values():
            for sub in ("tmp", "work"):
                (Path(host.directory) / sub).mkdir(parents=True, exist_ok=True)
            _ip("netns", "add", host.namespace)
            _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
            _ip("link", "set", host.veth, "master", self.bridge)
            _ip("link", "set", host.veth, "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "eth0", "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")

    def _start_store(self) -> None:
        host = self.hosts["s3"]
        self._s3 = S3Server.start(host=host.address, directory=Path(host.directory), launcher=tuple(self.on(host)))
        self._processes.append(self._s3.process)
        self.s3_port, self.bucket = self._s3.port, self._s3.bucket
        host.pids = [self._s3.process.pid]

    def _start_spark(self) -> None:
        master = self.hosts["master"]
        arguments = ["--host", master.address, "--port", str(MASTER_PORT), "--webui-port", str(MASTER_UI_PORT)]
        process = self._spawn(master, "org.apache.spark.deploy.master.Master", arguments, self.master_log)
        self.master_url = wait_for_line(self.master_log, MASTER_URL_LINE, process).group(1)
        workers = []
        for n, host in enumerate(self.worker_hosts, start=1):
            arguments = ["--host", host.address, "--port", "0", "--webui-port", str(WORKER_UI_PORT), "--cores", "1", "--memory", self.worker_memory]
            workers.append(self._spawn(host, "org.apache.spark.deploy.worker.Worker", [*arguments, "--work-dir", host.work_dir, self.master_url], self.worker_log(n)))
        self.save()
        for n, process in enumerate(workers, start=1):
            wait_for_line(self.worker_log(n), WORKER_REGISTERED_LINE, process)

    def _spawn(self, host: Host, main_class: str, arguments: list[str], log: Path) -> subprocess.Popen:
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [*self.on(host), *spark_class(main_class, arguments)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.environment(host), cwd=host.directory, start_new_session=True,
            )  # fmt: skip
        self._processes.append(process)
        host.pids = [process.pid]
        return process

    # ---------------------------------------------------------------------------- kill and down

    def kill_host(self, n: int | str, *, cut_link: bool = False, timeout_s: float = 15.0) -> list[int]:
        """SIGKILL to every process of worker host ``n`` (or of the host named ``n``: "driver",
        "master", "s3"): every process in its namespace, executors, their Python workers and task
        hosts included, until none is left; with ``cut_link`` its link goes down first (a network
        cut: the others see silence, not closed connections). The pids killed."""
        host = self.worker(int(n)) if str(n).isdigit() else self.hosts[n]
        if cut_link:
            _ip("link", "set", host.veth, "down", check=False)
        killed = self._kill_namespace(host.namespace, signal.SIGKILL, timeout_s)
        host.pids = []
        self.save()
        return killed

    def _kill_namespace(self, namespace: str, sig: signal.Signals, timeout_s: float) -> list[int]:
        """``sig`` to every process in ``namespace`` (again, to any started meanwhile) until none is
        left or ``timeout_s``; SIGKILL after that. The pids signalled."""
        signalled: list[int] = []
        deadline = time.monotonic() + timeout_s
        while pids := netns_pids(namespace):
            if time.monotonic() > deadline:
                sig = signal.SIGKILL
            if time.monotonic() > deadline + 10:
                break  # unkillable (uninterruptible sleep): leftovers() will name the namespace
            for pid in pids:
                if pid not in signalled or sig == signal.SIGKILL:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                    if pid not in signalled:
                        signalled.append(pid)
            self._reap()
            time.sleep(0.1)
        self._reap()
        return signalled

    def _reap(self) -> None:
        for process in self._processes:
            process.poll()

    def down(self, grace_s: float = 3.0) -> None:
        """Stops everything and removes every namespace, veth and the bridge of this cluster;
        anything already gone is skipped, so it can run after a failed ``up`` and twice."""
        namespaces = [host.namespace for host in self.hosts.values()]
        existing = set(_ip("netns", "list", check=False).stdout.split())
        namespaces = [ns for ns in namespaces if ns in existing]
        # SIGTERM everywhere first (the worker stops its executors), then whatever is left.
        for namespace in namespaces:
            for pid in netns_pids(namespace):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(netns_pids(ns) for ns in namespaces):
            self._reap()
            time.sleep(0.1)
        for namespace in namespaces:
            self._kill_namespace(namespace, signal.SIGKILL, 0)
        for process in self._processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._processes.clear()
        if self._s3 is not None:
            self._s3.log.close()
            self._s3 = None
        for namespace in namespaces:
            _ip("netns", "del", namespace, check=False)
        for host in self.hosts.values():
            if _ip("link", "show", host.veth, check=False).returncode == 0:
                _ip("link", "del", host.veth, check=False)
            host.pids = []
        if self.bridge and _ip("link", "show", self.bridge, check=False).returncode == 0:
            _ip("link", "del", self.bridge, check=False)
        if self.cluster_id:
            self.save(up=False)

    def leftovers(self) -> list[str]:
        """This cluster's namespaces, interfaces and processes that still exist (none after ``down``)."""
        found = []
        namespaces = set(_ip("netns", "list", check=False).stdout.split())
        links = _ip("-o", "link", "show", check=False).stdout
        for host in self.hosts.values():
            if host.namespace in namespaces:
                found.append(f"namespace {host.namespace} ({len(netns_pids(host.namespace))} processes)")
            if re.search(rf"^\d+: {re.escape(host.veth)}[@:]", links, re.M):
                found.append(f"interface {host.veth}")
        if self.bridge and re.search(rf"^\d+: {re.escape(self.bridge)}[@:]", links, re.M):
            found.append(f"bridge {self.bridge}")
        return found

    # ---------------------------------------------------------------------------------- status

    def status(self) -> dict:
        """Per host: whether its namespace exists, its link state and how many processes it has;
        the master's view of the workers (from its JSON UI, reached over the bridge)."""
        namespaces = set(_ip("netns", "list", check=False).stdout.split())
        hosts = {}
        for name, host in self.hosts.items():
            link = _ip("-o", "link", "show", host.veth, check=False).stdout
            hosts[name] = {
                "address": host.address,
                "namespace": host.namespace if host.namespace in namespaces else None,
                "link": None if not link else ("up" if ",UP" in link or "<UP" in link else "down"),
                "processes": len(netns_pids(host.namespace)) if host.namespace in namespaces else 0,
            }
        return {"id": self.cluster_id, "master": self.master_url, "s3": self.s3_endpoint, "hosts": hosts, "workers": self.master_workers()}

    def master_workers(self) -> dict[str, str] | None:
        """``{worker address: state}`` as the master sees them (ALIVE, DEAD...), None if it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=3) as response:
                view = json.load(response)
        except OSError:
            return None
        states: dict[str, str] = {}
        for worker in view.get("workers", []):
            # a host whose worker was restarted shows the old one DEAD and the new one ALIVE
            if states.get(worker["host"]) != "ALIVE":
                states[worker["host"]] = worker["state"]
        return states

    # ------------------------------------------------------------------------ a host comes back

    def ensure_worker(self, n: int) -> bool:
        """Start worker host ``n`` again if none of its processes runs (after :meth:`kill_host`: a
        machine that rebooted, its disk kept); True if it was started. Waits until it registered."""
        host = self.worker(n)
        if netns_pids(host.namespace):
            return False
        _ip("link", "set", host.veth, "up", check=False)  # after a cut
        log = self.worker_log(n)
        registered_before = log.read_text(errors="replace").count("Successfully registered with master") if log.exists() else 0
        arguments = ["--host", host.address, "--port", "0", "--webui-port", str(WORKER_UI_PORT), "--cores", "1", "--memory", self.worker_memory]
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [*self.on(host), *spark_class("org.apache.spark.deploy.worker.Worker", [*arguments, "--work-dir", host.work_dir, self.master_url])],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.environment(host), cwd=host.directory, start_new_session=True,
            )  # fmt: skip
        self._processes.append(process)
        host.pids = [process.pid]
        self.save()
        deadline = time.monotonic() + 90
        while log.read_text(errors="replace").count("Successfully registered with master") <= registered_before:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker-{n} did not come back; see {log}")
            time.sleep(0.2)
        return True

    # ---------------------------------------------------------------------------------- the store

    def filesystem(self):
        """A pyarrow filesystem on the cluster's store (from this machine's own namespace)."""
        return s3_server.filesystem_at(self.hosts["s3"].address, self.s3_port)

    def download(self, uri: str, directory: str | Path) -> None:
        """Copy everything under ``uri`` (on the cluster's store) into a local directory."""
        s3_server.download(self.filesystem(), uri, directory)

    # --------------------------------------------------------------------------------- the state

    def save(self, up: bool = True) -> None:
        state = {
            "up": up,
            "id": self.cluster_id,
            "directory": str(self.directory),
            "subnet": self.subnet,
            "bridge": self.bridge,
            "bridge_address": self.bridge_address if self.subnet else None,
            "master_url": self.master_url,
            "master_ui": self.master_ui if self.hosts else None,
            "s3_endpoint": self.s3_endpoint if self.s3_port else None,
            "s3_port": self.s3_port,
            "bucket": self.bucket,
            "python": self.python,
            "workers": self.workers,
            "worker_memory": self.worker_memory,
            "hosts": {name: asdict(host) for name, host in self.hosts.items()},
            "timings": self.timings,
        }
        path = self.directory / STATE_FILE
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(state, indent=2) + "\n")
        partial.replace(path)

    @classmethod
    def load(cls, directory: str | Path) -> MultiHostCluster:
        state = json.loads((Path(directory) / STATE_FILE).read_text())
        cluster = cls(Path(state["directory"]), state["workers"], state["worker_memory"], state["python"])
        cluster.cluster_id, cluster.subnet, cluster.bridge = state["id"], state["subnet"], state["bridge"]
        cluster.master_url, cluster.s3_port, cluster.bucket = state["master_url"], state["s3_port"], state["bucket"]
        cluster.hosts = {name: Host(**host) for name, host in state["hosts"].items()}
        return cluster

    def __enter__(self) -> MultiHostCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()


class _Background(threading.Thread):
    """``target()`` in a thread; :meth:`result` waits for it and raises what it raised."""

    def __init__(self, target) -> None:
        super().__init__(daemon=True)
        self._target_function, self._error = target, None
        self.start()

    def run(self) -> None:
        try:
            self._target_function()
        except BaseException as e:  # handed to result()
            self._error = e

    def result(self) -> None:
        self.join()
        if self._error is not None:
            raise self._error


def _directory(args: argparse.Namespace) -> Path:
    if args.dir:
        return Path(args.dir)
    if _LAST.exists():
        return Path(_LAST.read_text().strip())
    raise SystemExit("no --dir given and no cluster brought up from this machine's TMPDIR before")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.servers.netns_cluster", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="create the hosts and start the store, the master and the workers; returns when they are ready")
    up.add_argument("--dir", help="state, logs and the hosts' directories (default: a new temporary directory)")
    up.add_argument("--workers", type=int, default=3)
    up.add_argument("--worker-memory", default="1500m")
    down = commands.add_parser("down", help="stop every process and remove the namespaces, veths and bridge")
    down.add_argument("--dir")
    kill = commands.add_parser("kill-host", help="kill -9 every process of worker host N")
    kill.add_argument("n", help="a worker host's number (1..workers), or driver, master, s3")
    kill.add_argument("--dir")
    kill.add_argument("--cut-link", action="store_true", help="also set its link down (a network cut)")
    status = commands.add_parser("status", help="the hosts, their processes and the master's view of the workers")
    status.add_argument("--dir")
    args = parser.parse_args(argv)

    if args.command == "up":
        directory = Path(args.dir or tempfile.mkdtemp(prefix="deltastreams-test-cluster-"))
        cluster = MultiHostCluster(directory, args.workers, args.worker_memory)
        try:
            cluster.up()
        except NamespacesUnavailable as e:
            print(f"cannot create network namespaces here: {e}", file=sys.stderr)
            return 2
        except Exception as e:
            print(f"up failed: {e}\neverything it had created is removed; logs in {directory}", file=sys.stderr)
            return 1
        print(json.dumps({"directory": str(directory), "master": cluster.master_url, "s3": cluster.s3_endpoint,
                          "driver": {"namespace": cluster.hosts["driver"].namespace, "address": cluster.hosts["driver"].address},
                          "run on the driver": f"ip netns exec {cluster.hosts['driver'].namespace} <command>  (SPARK_LOCAL_IP={cluster.hosts['driver'].address})"}, indent=2))  # fmt: skip
        return 0
    cluster = MultiHostCluster.load(_directory(args))
    if args.command == "down":
        cluster.down()
        left = cluster.leftovers()
        print("down" + (f"; left: {left}" if left else ""))
        return 1 if left else 0
    if args.command == "kill-host":
        killed = cluster.kill_host(args.n, cut_link=args.cut_link)
        print(f"{'worker-' + args.n if args.n.isdigit() else args.n}: killed {len(killed)} processes {killed}" + ("; link down" if args.cut_link else ""))
        return 0
    print(json.dumps(cluster.status(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
