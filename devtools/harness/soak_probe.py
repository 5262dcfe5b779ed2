"""What the soak test measures of a running pageview job, each a read-only look from outside.

- :class:`BatchLog` follows the job's metrics file (``run --metrics-file``, one JSON line per
  committed micro-batch) and keeps, per batch, its end time, sub-topology, wall time and input.
- :func:`storage` counts files and bytes under ``topics/`` per kind of topic, the transaction
  logs' versions, and the files under the Spark checkpoints and the local state.
- :func:`memory` sums the memory of the job's processes by role (PSS: shared pages divided among
  the processes sharing them, so a fork is not counted twice); :func:`mean_memory` averages
  several such readings taken between two samples.
- :class:`CpuMeter` says which processes took the machine's cores between two samples: the
  job's by role, the generator, the soak itself, everything else, and the hypervisor's steal.
- :class:`CommitFollower` follows a topic's Delta log as it grows, keeping the time of every
  commit that appended records (and, for the output, how old its newest record was then), read
  as they come: log retention deletes the commit files behind the job (the output keeps about
  1,000 versions, under two minutes at 100 ms), so a verdict read from the log at the end would
  see only the last minutes.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from urllib.parse import unquote

import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltastreams.devtools.servers.process_tree import MachineCpu, ProcessInfo, job_processes, machine_cpu_s, resident_bytes
from deltastreams.sinks import Topic, latest_version, read_commit, topic_uri

TOPIC_KINDS = ("input", "repartition", "changelog", "sink")
_VERSION_FILE = re.compile(r"^(\d{20})\.json$")


@dataclass(frozen=True)
class Batch:
    time: float
    """Epoch seconds at the end of the batch."""
    subtopology: int
    total_ms: float
    records_in: int


class BatchLog:
    """The batches of a metrics file, read incrementally: each :meth:`read_new` returns the lines
    completed since the last call."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.batches: list[Batch] = []
        self._offset = 0

    def read_new(self) -> list[Batch]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line being written stays for the next call
        self._offset += len(complete)
        new = []
        for line in complete.splitlines():
            row = json.loads(line)
            new.append(Batch(row["time"], row["subtopology"], row["total_ms"], row["records_in"]))
        self.batches += new
        return new


def _tree_size(path: Path | str, known: FileSizes | None = None) -> tuple[int, int]:
    """Files and bytes under ``path`` (0, 0 if it does not exist); ``known``: see :class:`FileSizes`."""
    if known is not None:
        return known.tree_size(str(path))
    files = size = 0
    for directory, _, names in os.walk(path):
        for name in names:
            try:
                size += os.stat(os.path.join(directory, name)).st_size
            except FileNotFoundError:  # removed meanwhile by the job
                continue
            files += 1
    return files, size


class FileSizes:
    """Directory listings and file sizes from earlier readings, so that :func:`storage` stats only
    the files added since (a directory is listed, and its listing compared with the last one as
    sets).

    Why: a topic's files never change once written (Delta's data files and commits; only
    ``_last_checkpoint`` is rewritten), and a soak's input topic gains ~70,000 an hour: a stat of
    each, at every sample, cost the soak 2.5 s of CPU at once every minute by the second hour
    (201,757 files), beside the job it measures; listing them costs ~0.2 s."""

    _REWRITTEN = "_last_checkpoint"

    def __init__(self) -> None:
        self._dirs: dict[str, _Listing] = {}

    def tree_size(self, path: str) -> tuple[int, int]:
        try:
            names = set(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            self._dirs.pop(path, None)
            return 0, 0
        listing = self._dirs.setdefault(path, _Listing())
        for name in listing.names - names:
            listing.sizes.pop(name, None)
            listing.subdirs.discard(name)
        added = names - listing.names
        if self._REWRITTEN in names:
            added.add(self._REWRITTEN)
        for name in added:
            try:
                info = os.stat(os.path.join(path, name))
            except FileNotFoundError:  # removed meanwhile by the job
                names.discard(name)
                continue
            if stat.S_ISDIR(info.st_mode):
                listing.subdirs.add(name)
            else:
                listing.sizes[name] = info.st_size
        listing.names = names
        files, size = len(listing.sizes), sum(listing.sizes.values())
        for name in listing.subdirs:
            sub_files, sub_size = self.tree_size(os.path.join(path, name))
            files, size = files + sub_files, size + sub_size
        return files, size


@dataclass
class _Listing:
    names: set[str] = field(default_factory=set)
    sizes: dict[str, int] = field(default_factory=dict)
    subdirs: set[str] = field(default_factory=set)


def topic_kind(name: str, input_topics: tuple[str, ...]) -> str:
    if name in input_topics:
        return "input"
    if name.endswith("-repartition"):
        return "repartition"
    if name.endswith("-changelog"):
        return "changelog"
    return "sink"  # output topics, the dead-letter topic, a late-records topic


def storage(root: str | Path, state_dir: str | Path, application_id: str, input_topics: tuple[str, ...], *, known: FileSizes | None = None) -> dict:
    """Files and bytes per topic kind (``delta_log_files`` counts commit JSONs and checkpoints
    among them), transaction-log versions, files under the checkpoints and the local state.
    ``known``: the topics' file sizes from earlier readings (a reader that calls this again and
    again keeps one)."""
    root, state_dir = Path(root), Path(state_dir)
    topics = {kind: {"files": 0, "bytes": 0, "delta_log_files": 0, "tables": 0} for kind in TOPIC_KINDS}
    if (root / "topics").is_dir():
        for table in sorted((root / "topics").iterdir()):
            kind = topics[topic_kind(table.name, input_topics)]
            files, size = _tree_size(table, known)
            kind["files"] += files
            kind["bytes"] += size
            kind["delta_log_files"] += _tree_size(table / "_delta_log", known)[0]
            kind["tables"] += 1
    logs = sorted((root / "transactions").glob("**/_delta_log"))
    versions = [max((int(m.group(1)) for m in map(_VERSION_FILE.match, os.listdir(log)) if m), default=-1) for log in logs]
    # Spark's checkpoints live under the root, or (one query per application) in the local state
    # directory: counted as checkpoints either way, not as state.
    local_checkpoints = _tree_size(state_dir / application_id / "checkpoints")
    checkpoint_files = _tree_size(root / "checkpoints")[0] + local_checkpoints[0]
    state_files, state_bytes = _tree_size(state_dir)
    state_files, state_bytes = state_files - local_checkpoints[0], state_bytes - local_checkpoints[1]
    return {
        "topics": topics,
        "topics_files": sum(k["files"] for k in topics.values()),
        "topics_bytes": sum(k["bytes"] for k in topics.values()),
        "transaction_logs": len(logs),
        "transaction_versions": sum(v + 1 for v in versions),
        "transaction_log_files": sum(_tree_size(log)[0] for log in logs),
        "checkpoint_files": checkpoint_files,
        "state_files": state_files,
        "state_bytes": state_bytes,
    }


def process_role(info: ProcessInfo, driver_pid: int, processes: dict[int, ProcessInfo]) -> str:
    if info.pid == driver_pid:
        return "driver"
    program = os.path.basename(info.command.split(" ", 1)[0]) if info.command else ""
    if program == "java":
        return "jvm"
    if "deltastreams.streams._internal.runtime.task_host" in info.command:
        return "task-host"
    if "pyspark.daemon" in info.command:
        parent = processes.get(info.ppid)
        return "python-daemon" if parent is not None and "java" in parent.command.split(" ", 1)[0] else "python-worker"
    return "other"


def memory_mb(info: ProcessInfo) -> dict:
    """A process's PSS and RSS in MB, read together, and its PSS split into anonymous pages (heap)
    and file-backed ones (libraries, jars, mapped files): growth in the first is a leak's sign,
    in the second code and files being paged in. Where the kernel gives no rollup, RSS from
    /proc/PID/stat stands for all."""
    resident = resident_bytes(info.pid)
    if resident is None:
        mb = round(info.rss_bytes / 2**20, 1)
        return {"pss_mb": mb, "rss_mb": mb}
    rss, pss, anon, file = (round(b / 2**20, 1) for b in resident)
    return {"pss_mb": pss, "rss_mb": rss, "pss_anon_mb": anon, "pss_file_mb": file}


def job_roles(driver_pid: int, processes: dict[int, ProcessInfo]) -> list[tuple[ProcessInfo, str]]:
    """The job's processes, each with its :func:`process_role` (one walk of the table, for a
    sample's memory and CPU readings alike)."""
    return [(info, process_role(info, driver_pid, processes)) for info in job_processes(driver_pid, processes)]


def memory(driver_pid: int, processes: dict[int, ProcessInfo], roles: list[tuple[ProcessInfo, str]] | None = None) -> dict:
    """Memory (PSS, MB) of the driver, its JVM and the rest of the job's processes (Spark's Python
    daemon and workers, task hosts, ...), with every process listed (PSS and RSS). ``roles``:
    :func:`job_roles` of the same table, when the caller has it."""
    roles = job_roles(driver_pid, processes) if roles is None else roles
    listed = [{"pid": p.pid, "role": role, **memory_mb(p)} for p, role in roles]
    by_role = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
    for entry in listed:
        by_role[entry["role"] if entry["role"] in ("driver", "jvm") else "python"] += entry["pss_mb"]
    return {
        **{role: round(mb, 1) for role, mb in by_role.items()},
        "total": round(sum(by_role.values()), 1),
        "python_processes": sum(1 for e in listed if e["role"] not in ("driver", "jvm")),
        "processes": listed,
    }


def mean_memory(readings: list[dict]) -> dict:
    """The mean of several :func:`memory` readings, in the same shape, with ``readings`` (how many)
    and ``peak_total`` (the largest total read). Each process's figures are its mean over the
    readings it appears in.

    Why: the job's memory follows its own cycles (retention's steps run every minute, each
    holding its working memory for a few seconds), so one reading a minute lands at a phase of
    that cycle that drifts slowly through a run; a trend fitted to such readings measures the
    drift, not growth. Readings spread across the minute see every phase."""
    if not readings:
        raise ValueError("mean_memory needs at least one reading")
    by_pid: dict[int, list[dict]] = {}
    for reading in readings:
        for entry in reading["processes"]:
            by_pid.setdefault(entry["pid"], []).append(entry)
    processes = []
    for pid, entries in by_pid.items():
        numbers = {k for e in entries for k, v in e.items() if k != "pid" and isinstance(v, (int, float))}
        mean = {k: round(fmean(e[k] for e in entries if k in e), 1) for k in sorted(numbers)}
        processes.append({"pid": pid, "role": entries[-1]["role"], **mean})
    totals = {k: round(fmean(r[k] for r in readings), 1) for k in ("driver", "jvm", "python", "total")}
    return {
        **totals,
        "python_processes": readings[-1]["python_processes"],
        "processes": processes,
        "readings": len(readings),
        "peak_total": max(r["total"] for r in readings),
    }


CPU_ROLES = ("driver", "jvm", "task-host", "python", "generator", "soak", "other", "steal")


class CpuMeter:
    """Cores each role used between two calls of :meth:`read` (CPU seconds over wall seconds): the
    job's processes by :func:`process_role` (the rest of them, Spark's Python daemon and workers, as ``python``), the
    generator, the soak's own process, ``other`` (the rest of the machine's busy time) and
    ``steal`` (time the hypervisor gave to other machines). ``idle`` is what was left.

    Why: a job that slows in every phase by the same share, with its own work unchanged, is one
    that got less CPU; this names who took it. A process that ends between two reads loses its
    CPU since the first; one that starts counts whole."""

    def __init__(self, soak_pid: int | None = None) -> None:
        self.soak_pid = os.getpid() if soak_pid is None else soak_pid
        self._seen: dict[tuple[int, int], float] = {}
        self._machine: MachineCpu | None = None
        self._time = 0.0

    def read(self, job_pid: int, generator_pid: int | None, processes: dict[int, ProcessInfo], now: float, job: list[tuple[ProcessInfo, str]] | None = None) -> dict | None:
        """Cores per role since the last call (None at the first, which only sets the start).
        ``job``: :func:`job_roles` of the same table, when the caller has it."""
        roles = {}
        for info, role in job_roles(job_pid, processes) if job is None else job:
            roles[(info.pid, info.started)] = role if role in ("driver", "jvm", "task-host") else "python"
        for pid, role in ((generator_pid, "generator"), (self.soak_pid, "soak")):
            if pid in processes:
                roles[(pid, processes[pid].started)] = role
        seen = {key: processes[key[0]].cpu_s for key in roles}
        machine = machine_cpu_s()
        previous, previous_machine, elapsed = self._seen, self._machine, now - self._time
        self._seen, self._machine, self._time = seen, machine, now
        if previous_machine is None or elapsed <= 0:
            return None
        used = dict.fromkeys(CPU_ROLES, 0.0)
        for key, cpu_s in seen.items():
            used[roles[key]] += cpu_s - previous.get(key, 0.0)
        ours = sum(used.values())
        used["other"] = max(0.0, machine.busy - previous_machine.busy - ours)
        used["steal"] = machine.steal - previous_machine.steal
        cores = {role: round(s / elapsed, 3) for role, s in used.items()}
        cores["idle"] = round((machine.idle - previous_machine.idle) / elapsed, 3)
        return cores


@dataclass(frozen=True)
class Commit:
    time: float
    """Epoch seconds: the commit's own timestamp (``commitInfo.timestamp``)."""
    version: int
    records: int
    freshest_ms: float | None = None
    """How old the commit's newest record was when it committed (commit time minus the largest
    record timestamp, ms): for the pageview output, the end-to-end latency of the newest input
    that reached the output. Late input records only ever make a record older, never the newest."""


class CommitFollower:
    """The appends of one topic, as :meth:`read_new` finds them: commits that added records
    (Delta ``WRITE``s with data changes; retention's rewrites and removals are not appends)."""

    def __init__(self, root: str | Path, topic: str, *, freshness: bool = False) -> None:
        self.root, self.topic = str(root), topic
        self.uri = topic_uri(self.root, topic)
        self.freshness = freshness
        self.version = -1
        self.commits: list[Commit] = []
        self.missed = 0
        """Versions whose commit file was gone before they were read (log retention outran the soak)."""

    def read_new(self) -> list[Commit]:
        if self.version < 0 and not Topic.exists(self.root, self.topic):
            return []
        new = []
        for version in range(self.version + 1, latest_version(self.uri, self.version) + 1):
            actions = read_commit(self.uri, version)
            self.version = version
            if actions is None:
                self.missed += 1
                continue
            info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            adds = [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
            if info.get("operation") != "WRITE" or not adds:
                continue
            stamp = int(info["timestamp"])
            records = sum(json.loads(a.get("stats") or "{}").get("numRecords", 0) for a in adds)
            new.append(Commit(stamp / 1000, version, records, self._freshest(adds, stamp) if self.freshness else None))
        self.commits += new
        return new

    def _freshest(self, adds: list[dict], commit_ms: int) -> float | None:
        newest = None
        for add in adds:
            try:
                stamps = pq.read_table(os.path.join(self.uri, unquote(add["path"])), columns=["timestamp"]).column("timestamp")
            except FileNotFoundError:  # removed and deleted by retention since: its commit still counts
                continue
            if len(stamps):
                top = pc.max(stamps).as_py()
                newest = top if newest is None else max(newest, top)
        return None if newest is None else float(commit_ms - newest)
