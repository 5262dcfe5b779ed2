"""The processes of a job and their resident memory, from ``/proc`` (Linux); and how the tools
stop a process they started (:func:`terminate`).

A job is its driver process, the driver's descendants (the JVM, Spark's Python daemon and its
workers) and every process in a process group one of those belongs to: Spark's Python daemon
leads a group of its own, and processes detached from it (reparented to init, as deltastreams'
task hosts are) stay in that group, where a walk by parent pid would miss them. The caller's own
group is never taken in, so a job started without a session of its own does not pull in its
starter's siblings.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import NamedTuple

_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    started: int
    """Start time in clock ticks since boot: with the pid, names a process even if the pid is reused."""
    rss_bytes: int
    command: str
    cpu_s: float = 0.0
    """CPU seconds (user + system) spent so far."""

    @property
    def rss_mb(self) -> float:
        return self.rss_bytes / 2**20


def all_processes() -> dict[int, ProcessInfo]:
    processes = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _read(int(entry))
            if info is not None:
                processes[info.pid] = info
    return processes


def _read(pid: int) -> ProcessInfo | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the command in parentheses may hold spaces
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except (OSError, IndexError):
        return None  # gone meanwhile
    if fields[0] == "Z":
        return None  # exited; only its exit status is left, for a parent (or init) to collect
    # fields[0] is field 3 of proc(5): state, ppid, pgrp, ... utime (14), stime (15), ... starttime (22), vsize, rss (24)
    cpu_s = (int(fields[11]) + int(fields[12])) * _TICK_S
    return ProcessInfo(pid, int(fields[1]), int(fields[2]), int(fields[19]), int(fields[21]) * _PAGE, command, cpu_s)


def process(pid: int) -> ProcessInfo | None:
    """``pid``'s entry (None if it is gone or has exited)."""
    return _read(pid)


def busy_cpu_s() -> float:
    """CPU seconds the machine has spent not idle since boot, every core summed."""
    times = machine_cpu_s()
    return times.busy + times.steal


class MachineCpu(NamedTuple):
    """CPU seconds since boot, every core summed, from the first line of ``/proc/stat``."""

    busy: float
    """Running anything: user, nice, system, interrupts."""
    steal: float
    """Wanted by this (virtual) machine but given to another by the hypervisor: time its
    processes could not run although they were ready to."""
    idle: float
    """Idle, waits on I/O included."""


def machine_cpu_s() -> MachineCpu:
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    return MachineCpu((user + nice + system + irq + softirq) * _TICK_S, steal * _TICK_S, (idle + iowait) * _TICK_S)


class Resident(NamedTuple):
    """A process's resident memory in bytes, from one read of the kernel's rollup."""

    rss: int
    pss: int
    pss_anon: int
    """PSS of anonymous pages: heaps, malloc arenas, the JVM's heap; what grows when a process leaks."""
    pss_file: int
    """PSS of file-backed pages: shared libraries, jars, memory-mapped files, paged in as code runs."""


def resident_bytes(pid: int) -> Resident | None:
    """Resident memory of ``pid`` from one read of the kernel's rollup (None if it is gone or the
    kernel does not say). PSS is resident memory with each page shared by n processes counted 1/n
    in each; RSS counts a shared page in full in every process, so a job's forked children
    (Spark's Python workers, a JVM forking at shutdown) would double what they share with their
    parent in a sum of RSS. All come from the same read because a process growing between two
    reads (a worker just forked) would show a PSS above its RSS."""
    values = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("Rss", "Pss", "Pss_Anon", "Pss_File"):
                    values[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if "Rss" not in values or "Pss" not in values:
        return None
    return Resident(values["Rss"], values["Pss"], values.get("Pss_Anon", 0), values.get("Pss_File", 0))


def job_processes(root_pid: int, processes: dict[int, ProcessInfo] | None = None) -> list[ProcessInfo]:
    """``root_pid`` and the processes that belong to it (see the module docstring), root first."""
    processes = all_processes() if processes is None else processes
    if root_pid not in processes:
        return []
    children: dict[int, list[int]] = {}
    groups: dict[int, list[int]] = {}
    for info in processes.values():
        children.setdefault(info.ppid, []).append(info.pid)
        groups.setdefault(info.pgid, []).append(info.pid)
    foreign_group = os.getpgid(0)
    members, seen_groups, stack = [root_pid], set(), [root_pid]
    found = {root_pid}
    while stack:
        pid = stack.pop()
        related = list(children.get(pid, ()))
        group = processes[pid].pgid
        if group != foreign_group and group not in seen_groups:
            seen_groups.add(group)
            related += groups.get(group, ())
        for other in related:
            if other not in found:
                found.add(other)
                members.append(other)
                stack.append(other)
    return [processes[pid] for pid in members]


def still_running(processes: list[ProcessInfo]) -> list[ProcessInfo]:
    """Those of ``processes`` that still exist (same pid and start time)."""
    alive = []
    for info in processes:
        now = _read(info.pid)
        if now is not None and now.started == info.started:
            alive.append(now)
    return alive


def terminate(process: subprocess.Popen, grace_s: float) -> bool:
    """SIGTERM, ``grace_s`` to exit, then SIGKILL; always waited for. Whether it had to be killed."""
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace_s)
        return False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return True
