"""Soak test of the pageview job: a steady input for N minutes, then whether the job ran flat.

    python -m deltastreams.devtools.harness.soak --minutes 10                          # 5,000 events/s, commits every 100 ms
    python -m deltastreams.devtools.harness.soak --minutes 3 --rate 2000 --root /tmp/soak --set caching=false

On a fresh root, starts ``python -m deltastreams.jobs.pageview generate --rate`` and then ``python -m
deltastreams.jobs.pageview run --metrics-file`` as separate processes, the way a user would. Once the job has
committed its first micro-batch, the soak runs for ``--minutes`` and samples every minute (runs
under 10 minutes: ten samples) and at the end: batch wall times of the interval (median, p95,
from the metrics file), the input's append cadence and the job's (median gap between the input
topic's appends and between the output topic's, followed every second as they come) and the
job's latency (p99 over the output's commits of how old their newest record was), files and
bytes under ``topics/`` per kind of topic, transaction-log versions, files under the Spark
checkpoints and the local state, memory (PSS, read every 5 s and averaged per sample) of the
generator, of the driver, its JVM and every other process of the job (Spark's Python daemon and workers, task hosts: see
:mod:`deltastreams.devtools.servers.process_tree`), the cores each of them took since the last sample (with the
rest of the machine's and the hypervisor's steal), the generator's progress and the job's lag behind it. It prints a row
per sample, stops the generator and the job with SIGTERM (the job stops between micro-batches;
the soak checks that it exited 0 and left no process behind), prints the cadences and latency per
bucket of the run, the cores per role per bucket, and the verdict (:mod:`deltastreams.devtools.harness.soak_verdict`) and writes everything to
``<root>/soak-report.json``; the logs of both processes and the job's metrics file stay under the
root. ``--input-log-retention-min`` gives the input topic a ``delta.logRetentionDuration`` that
its writer applies as it goes (default: the topic default, one day).

Exit code: 0 when every check passed, 1 when one failed or could not be decided, 2 when the soak
could not run (the job did not start, or a process died).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.devtools.harness import soak_verdict as verdict
from deltastreams.jobs.pageview import APPLICATION_ID, INPUT_TOPIC, OUTPUT_TOPIC, build_topology
from deltastreams.devtools.servers.process_tree import ProcessInfo, all_processes, job_processes, still_running, terminate
from deltastreams.devtools.harness.soak_probe import CPU_ROLES, BatchLog, CommitFollower, CpuMeter, FileSizes, job_roles, mean_memory, memory, memory_mb, storage
from deltastreams.sinks import Topic

STARTUP_TIMEOUT_S = 300.0
GENERATOR_STOP_S = 30.0
JOB_STOP_S = 120.0
LEFTOVER_WAIT_S = 15.0
MEMORY_EVERY_S = 5.0
"""Seconds between memory readings; a sample's memory is the mean of the readings since the
last sample (:func:`~deltastreams.devtools.harness.soak_probe.mean_memory` says why)."""


@dataclass(frozen=True)
class SoakSettings:
    minutes: float
    rate: int
    commit_interval_ms: int
    root: Path
    sets: tuple[str, ...] = ()
    sample_s: float | None = None
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    input_log_retention_min: float | None = None

    @property
    def seconds(self) -> float:
        return self.minutes * 60

    @property
    def sample_every_s(self) -> float:
        if self.sample_s is not None:
            return self.sample_s
        return 60.0 if self.seconds >= 600 else max(5.0, self.seconds / 10)

    def config(self) -> StreamsConfig:
        settings = {"application_id": APPLICATION_ID, "root": str(self.root)}
        for item in self.sets:
            key, _, value = item.partition("=")
            settings[key] = value
        return StreamsConfig.load(settings)


@dataclass
class Stopped:
    exit_code: int | None
    seconds: float
    killed: bool = False


class SoakError(DeltaStreamsError):
    """The soak could not run: a process did not start or died. The message names it and ends
    with the tail of its log."""


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


class Soak:
    """The two processes, the probes and the samples of one soak run."""

    def __init__(self, settings: SoakSettings) -> None:
        self.settings = settings
        self.samples: list[dict] = []
        root = settings.root
        self.metrics_path = root / "soak-metrics.jsonl"
        self.status_path = root / "soak-generator.json"
        self.job_log, self.generator_log = root / "soak-job.log", root / "soak-generator.log"
        self.job_details = root / "soak-job-details.log"
        """The job's log file: its DEBUG lines and Spark's own log (the terminal output, in job_log, has neither)."""
        self.batch_log = BatchLog(self.metrics_path)
        self.state_dir = settings.config().local_state_dir
        self.input_subtopologies = {sub.id for sub in build_topology().subtopologies if INPUT_TOPIC in sub.source_topics}
        self.generator: subprocess.Popen | None = None
        self.job: subprocess.Popen | None = None
        self.first_batch_time = 0.0
        self.input_commits = CommitFollower(root, INPUT_TOPIC)
        self.output_commits = CommitFollower(root, OUTPUT_TOPIC, freshness=True)
        self.input_partitions = 1
        self.memory_readings: list[dict] = []
        self.file_sizes = FileSizes()  # the input's files, stat'ed once each (a minute's walk grew to 2.5 s of CPU)
        self.generator_readings: list[float] = []
        self.last_memory_read = 0.0
        self.cpu = CpuMeter()

    # -- processes ---------------------------------------------------------------------------

    def _launch(self, args: list[str], log_path: Path) -> subprocess.Popen:
        with log_path.open("ab") as log_file:
            # A session of its own: a Ctrl-C on the soak's terminal reaches the soak only, which
            # then stops both processes the way it does at the end.
            return subprocess.Popen([sys.executable, "-m", "deltastreams.jobs.pageview", *args], stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self) -> None:
        s = self.settings
        generate = ["generate", "--root", str(s.root), "--rate", str(s.rate), "--status-file", str(self.status_path)]
        if s.input_log_retention_min is not None:
            generate += ["--log-retention-ms", str(round(s.input_log_retention_min * 60_000))]
        self.generator = self._launch(generate, self.generator_log)
        self._wait_for(lambda: self.status_path.exists(), "the generator's first append", self.generator, self.generator_log, 120)
        self.input_partitions = Topic.open(str(s.root), INPUT_TOPIC).partitions
        run = ["run", "--root", str(s.root), "--commit-interval-ms", str(s.commit_interval_ms), "--metrics-file", str(self.metrics_path), "--log-file", str(self.job_details)]
        for item in s.sets:
            run += ["--set", item]
        self.job = self._launch(run, self.job_log)
        self._wait_for(lambda: bool(self.batch_log.read_new() or self.batch_log.batches), "the job's first micro-batch", self.job, self.job_log, s.startup_timeout_s)
        self.first_batch_time = self.batch_log.batches[0].time
        self.cpu.read(self.job.pid, self.generator.pid, all_processes(), time.time())
        self.follow()

    def follow(self) -> None:
        """Read the appends to the input and output topics since the last look (every second
        while the soak waits: their logs are cleaned as the job runs)."""
        self.input_commits.read_new()
        self.output_commits.read_new()

    def _wait_for(self, ready, what: str, process: subprocess.Popen, log_path: Path, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready():
            if process.poll() is not None:
                raise SoakError(f"waiting for {what}: the process exited with code {process.returncode}; its log ({log_path}) ends:\n{_tail(log_path)}")
            if time.monotonic() > deadline:
                raise SoakError(f"no sign of {what} after {timeout_s:.0f} s; its log ({log_path}) ends:\n{_tail(log_path)}")
            time.sleep(0.5)

    def check_alive(self) -> None:
        for name, process, log_path in (("job", self.job, self.job_log), ("generator", self.generator, self.generator_log)):
            if process is not None and process.poll() is not None:
                raise SoakError(f"the {name} exited with code {process.returncode} during the soak; its log ({log_path}) ends:\n{_tail(log_path)}")

    def stop(self) -> dict:
        """SIGTERM to the generator, then to the job's driver; SIGKILL only after a timeout.
        Then every process the job had must be gone."""
        generator = _terminate(self.generator, GENERATOR_STOP_S) if self.generator is not None else None
        before = job_processes(self.job.pid) if self.job is not None and self.job.poll() is None else []
        job = _terminate(self.job, JOB_STOP_S) if self.job is not None else None
        deadline = time.monotonic() + LEFTOVER_WAIT_S
        leftover = still_running(before[1:])
        while leftover and time.monotonic() < deadline:
            time.sleep(0.5)
            leftover = still_running(leftover)
        for info in leftover:  # ours to clean up: a shared machine keeps no stray workers
            _kill(info)
        log_text = self.job_log.read_text(errors="replace") if self.job_log.exists() else ""
        details = self.job_details.read_text(errors="replace") if self.job_details.exists() else ""
        return {
            "generator": vars(generator) if generator else None,
            "job": vars(job) if job else None,
            "job_processes_before_stop": len(before),
            "leftover_processes": [{"pid": p.pid, "command": p.command[:200]} for p in leftover],
            "job_said_stopped": "stopped on SIGTERM" in log_text,
            "job_log_errors": sum(1 for line in details.splitlines() if " ERROR " in line),
        }

    # -- sampling ----------------------------------------------------------------------------

    def read_memory(self, processes: dict[int, ProcessInfo] | None = None, roles: list[tuple[ProcessInfo, str]] | None = None) -> None:
        """One memory reading of the job and the generator, kept for the next sample's means."""
        processes = all_processes() if processes is None else processes
        self.memory_readings.append(memory(self.job.pid, processes, roles))
        generator_mb = _pss_mb(processes, self.generator.pid)
        if generator_mb is not None:
            self.generator_readings.append(generator_mb)
        self.last_memory_read = time.time()

    def sample(self, t: float, previous_t: float) -> dict:
        self.batch_log.read_new()
        self.follow()
        consumed = sum(b.records_in for b in self.batch_log.batches if b.subtopology in self.input_subtopologies)
        start, end = self.first_batch_time + previous_t, self.first_batch_time + t
        interval = [b for b in self.batch_log.batches if start < b.time <= end]
        outputs = [c for c in self.output_commits.commits if start < c.time <= end]
        status = _read_json(self.status_path)
        generated = status.get("events")
        processes = all_processes()
        roles = job_roles(self.job.pid, processes)
        self.read_memory(processes, roles)
        row = {
            "t": round(t, 1),
            "time": time.time(),
            **_batch_stats(interval),
            "by_subtopology": {str(sid): _batch_stats([b for b in interval if b.subtopology == sid]) for sid in sorted({b.subtopology for b in interval})},
            "consumed": consumed,
            "consumed_per_s": None,
            "generated": generated,
            "input_files_written": (status.get("appends") or 0) * self.input_partitions,
            "input_gap_ms_p50": _gap_p50([c.time for c in self.input_commits.commits if start - 1 < c.time <= end]),
            "output_gap_ms_p50": _gap_p50([c.time for c in outputs]),
            "latency_ms_p99": _p99([c.freshest_ms for c in outputs if c.freshest_ms is not None]),
            "generator_behind": status.get("behind_events"),
            "lag": None if generated is None else generated - consumed,
            **storage(self.settings.root, self.state_dir, APPLICATION_ID, (INPUT_TOPIC,), known=self.file_sizes),
            "memory_mb": mean_memory(self.memory_readings),
            "generator_memory_mb": round(float(np.mean(self.generator_readings)), 1) if self.generator_readings else None,
            "cpu_cores": self.cpu.read(self.job.pid, self.generator.pid, processes, time.time(), roles),
        }
        self.memory_readings, self.generator_readings = [], []
        if self.samples:
            row["consumed_per_s"] = round((consumed - self.samples[-1]["consumed"]) / max(t - previous_t, 1e-9), 1)
        self.samples.append(row)
        return row

    def run_samples(self) -> bool:
        """Sample until the end; returns False if interrupted (Ctrl-C), after a last sample."""
        every, total = self.settings.sample_every_s, self.settings.seconds
        previous, k = 0.0, 1
        print(HEADER, flush=True)
        try:
            while previous < total:
                t = min(k * every, total)
                while time.time() < self.first_batch_time + t:
                    self.check_alive()
                    self.follow()
                    if time.time() - self.last_memory_read >= MEMORY_EVERY_S:
                        self.read_memory()
                    time.sleep(max(0.0, min(1.0, self.first_batch_time + t - time.time())))
                print(_row(self.sample(t, previous)), flush=True)
                previous, k = t, k + 1
        except KeyboardInterrupt:
            t = time.time() - self.first_batch_time
            print(_row(self.sample(t, previous)), flush=True)
            return False
        return True


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _pss_mb(processes: dict[int, ProcessInfo], pid: int) -> float | None:
    info = processes.get(pid)
    return None if info is None else memory_mb(info)["pss_mb"]


def _gap_p50(times: list[float]) -> float | None:
    _, ms = verdict.gaps(times)
    return round(float(np.median(ms)), 1) if ms else None


def _p99(values: list[float]) -> float | None:
    return round(float(np.percentile(values, 99)), 1) if values else None


def _batch_stats(batches: list) -> dict:
    if not batches:
        return {"batches": 0, "batch_ms_p50": None, "batch_ms_p95": None}
    ms = np.array([b.total_ms for b in batches])
    return {"batches": len(batches), "batch_ms_p50": round(float(np.median(ms)), 1), "batch_ms_p95": round(float(np.percentile(ms, 95)), 1)}


def _terminate(process: subprocess.Popen, timeout_s: float) -> Stopped:
    started = time.monotonic()
    killed = terminate(process, timeout_s)
    return Stopped(process.returncode, round(time.monotonic() - started, 1), killed)


def _kill(info: ProcessInfo) -> None:
    if still_running([info]):  # the same process, not a new one with its pid
        try:
            os.kill(info.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


HEADER = (
    f"{'t s':>6} {'batches':>7} {'p50 ms':>7} {'p95 ms':>7} {'in/s':>7} {'lag':>8} | {'in gap':>6} {'out gap':>7} {'lat p99':>7} | {'topics files':>12} {'MB':>7} "
    f"{'input':>7} {'repart':>7} {'chlog':>7} {'sink':>7} | {'txlog v':>7} {'ckpt':>6} {'state':>6} | PSS MB {'drv':>5} {'jvm':>5} {'py (n)':>11} {'total':>6} {'gen':>5}"
)


def _fmt(value, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def _row(s: dict) -> str:
    topics, mem = s["topics"], s["memory_mb"]
    return (
        f"{s['t']:>6.0f} {s['batches']:>7} {_fmt(s['batch_ms_p50']):>7} {_fmt(s['batch_ms_p95']):>7} {_fmt(s['consumed_per_s']):>7} {_fmt(s['lag']):>8} | "
        f"{_fmt(s['input_gap_ms_p50']):>6} {_fmt(s['output_gap_ms_p50']):>7} {_fmt(s['latency_ms_p99']):>7} | "
        f"{s['topics_files']:>12,} {s['topics_bytes'] / 2**20:>7,.1f} "
        f"{topics['input']['files']:>7,} {topics['repartition']['files']:>7,} {topics['changelog']['files']:>7,} {topics['sink']['files']:>7,} | "
        f"{s['transaction_versions']:>7,} {s['checkpoint_files']:>6,} {s['state_files']:>6,} | "
        f"{'':6} {mem['driver']:>5,.0f} {mem['jvm']:>5,.0f} {mem['python']:>6,.0f} ({mem['python_processes']:>2}) {mem['total']:>6,.0f} {_fmt(s['generator_memory_mb']):>5}"
    )


def cadence_buckets(soak: Soak, buckets: verdict.Buckets) -> list[dict]:
    """Per bucket of the run: the input's and the output's median gap between appends, and the
    output's latency (p50, p99), as the verdict judges them."""
    since = soak.first_batch_time
    inputs = [c.time - since for c in soak.input_commits.commits]
    outputs = [(c.time - since, c.freshest_ms) for c in soak.output_commits.commits if c.freshest_ms is not None]
    in_t, in_gap = verdict.gaps(inputs)
    out_t, out_gap = verdict.gaps([t for t, _ in outputs])
    rows = []
    for (start, end), i, o, lat in zip(
        buckets.spans(), buckets.split(in_t, in_gap), buckets.split(out_t, out_gap), buckets.split([t for t, _ in outputs], [ms for _, ms in outputs]), strict=True
    ):
        rows.append(
            {
                "from_s": round(start), "to_s": round(end), "input_appends": len(i), "input_gap_ms_p50": _median(i),
                "output_commits": len(o), "output_gap_ms_p50": _median(o), "latency_ms_p50": _median(lat), "latency_ms_p99": _p99(lat),
            }
        )  # fmt: skip
    return rows


def cpu_buckets(samples: list[dict], buckets: verdict.Buckets) -> list[dict]:
    """Per bucket of the run: the cores each role used, the mean over the samples that ended in it."""
    rows = []
    for (start, end), in_bucket in zip(buckets.spans(), buckets.split([s["t"] for s in samples], [s.get("cpu_cores") for s in samples]), strict=True):
        readings = [c for c in in_bucket if c]
        means = {role: round(float(np.mean([c[role] for c in readings])), 2) if readings else None for role in (*CPU_ROLES, "idle")}
        rows.append({"from_s": round(start), "to_s": round(end), **means})
    return rows


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 1) if values else None


def judge(soak: Soak, stop: dict) -> tuple[list[verdict.Check], dict, verdict.Windows]:
    duration = soak.samples[-1]["t"] if soak.samples else 0.0
    windows = verdict.Windows.for_duration(duration)
    buckets = verdict.Buckets.for_duration(duration)
    since = soak.first_batch_time
    batches = [(b.time - soak.first_batch_time, b.total_ms) for b in soak.batch_log.batches]
    topics, slopes = verdict.topics_check(soak.samples, windows)
    final = _read_json(soak.status_path)
    lag = soak.samples[-1]["lag"] if soak.samples else None
    job = stop["job"] or {}
    stopped = verdict.Check(
        "job stopped cleanly",
        job.get("exit_code") == 0 and not job.get("killed") and stop["job_said_stopped"] and not stop["leftover_processes"],
        f"exit code {job.get('exit_code')} after {job.get('seconds')} s{' (killed)' if job.get('killed') else ''}, "
        f"{'said' if stop['job_said_stopped'] else 'did not say'} 'stopped on SIGTERM', {len(stop['leftover_processes'])} processes left behind",
    )
    checks = [
        verdict.cadence_check("input appends flat", [c.time - since for c in soak.input_commits.commits], buckets),
        verdict.cadence_check("output commits flat", [c.time - since for c in soak.output_commits.commits], buckets),
        verdict.latency_check([(c.time - since, c.freshest_ms) for c in soak.output_commits.commits if c.freshest_ms is not None], buckets),
        verdict.batch_time_check(batches, windows),
        topics,
        verdict.memory_check(soak.samples, windows),
        verdict.generator_memory_check(soak.samples, windows),
        verdict.process_memory_check(soak.samples, windows),
        verdict.generator_check(final.get("achieved_rate"), soak.settings.rate),
        verdict.lag_check(lag, soak.settings.rate),
        stopped,
    ]
    return checks, slopes, windows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.harness.soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, required=True, help="how long to run after the job's first micro-batch (fractions allowed)")
    parser.add_argument("--rate", type=int, default=5000, help="input events per second")
    parser.add_argument("--commit-interval-ms", type=int, default=100)
    parser.add_argument("--root", help="a new or empty directory (default: a new one under the temp directory)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for the job (conf/defaults.toml)")
    parser.add_argument("--sample-s", type=float, help="seconds between samples (default 60; runs under 10 minutes: a tenth of the run)")
    parser.add_argument("--startup-timeout-s", type=float, default=STARTUP_TIMEOUT_S, help="how long to wait for the job's first micro-batch")
    parser.add_argument("--input-log-retention-min", type=float, help="the input topic's delta.logRetentionDuration, in minutes (default: one day)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.rate <= 0 or (args.sample_s is not None and args.sample_s <= 0) or (args.input_log_retention_min is not None and args.input_log_retention_min <= 0):
        parser.error("--minutes, --rate, --sample-s and --input-log-retention-min must be positive")
    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="deltastreams-soak-"))
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        parser.error(f"--root {root} is not an empty directory: the soak measures growth from nothing, give it a new one")
    settings = SoakSettings(args.minutes, args.rate, args.commit_interval_ms, root.absolute(), tuple(args.set), args.sample_s, args.startup_timeout_s, args.input_log_retention_min)
    try:
        settings.config()
    except DeltaStreamsError as e:
        parser.error(str(e))
    root.mkdir(parents=True, exist_ok=True)
    return run_soak(settings)


def run_soak(settings: SoakSettings) -> int:
    # SIGTERM ends the soak the way Ctrl-C does: both processes run in sessions of their own and
    # would otherwise outlive it.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    soak = Soak(settings)
    print(f"soak: {settings.minutes:g} min at {settings.rate:,} events/s, commit interval {settings.commit_interval_ms} ms, root {settings.root}", flush=True)
    error, completed = None, False
    try:
        soak.start()
        print(f"soak: first micro-batch committed; sampling every {settings.sample_every_s:g} s", flush=True)
        completed = soak.run_samples()
    except SoakError as e:
        error = str(e)
    except KeyboardInterrupt:
        error = "interrupted before the first micro-batch"
    stop = soak.stop()
    checks, slopes, windows = judge(soak, stop) if soak.samples else ([], {}, None)
    bucketing = verdict.Buckets.for_duration(soak.samples[-1]["t"]) if soak.samples else None
    buckets = cadence_buckets(soak, bucketing) if bucketing else []
    cpu = cpu_buckets(soak.samples, bucketing) if bucketing else []
    result = "ERROR" if error else verdict.overall(checks)
    report = {
        "settings": {
            "minutes": settings.minutes, "rate": settings.rate, "commit_interval_ms": settings.commit_interval_ms, "root": str(settings.root),
            "set": list(settings.sets), "sample_s": settings.sample_every_s, "input_log_retention_min": settings.input_log_retention_min,
        },  # fmt: skip
        "first_batch_time": soak.first_batch_time,
        "completed": completed,
        "error": error,
        "windows": None if windows is None else {"baseline_s": windows.baseline, "last_s": windows.last},
        "samples": soak.samples,
        "buckets": buckets,
        "cpu_buckets": cpu,
        "commits_missed": {"input": soak.input_commits.missed, "output": soak.output_commits.missed},
        "batches": len(soak.batch_log.batches),
        "generator": _read_json(soak.status_path),
        "stop": stop,
        "slopes": slopes,
        "checks": [c.to_json() for c in checks],
        "verdict": result,
    }
    (settings.root / "soak-report.json").write_text(json.dumps(report, indent=1))
    if error:
        print(f"soak: {error}", file=sys.stderr)
    if buckets:
        print(f"\n{'bucket s':>11} {'appends in':>10} {'in gap p50':>10} {'commits out':>11} {'out gap p50':>11} {'lat p50':>7} {'lat p99':>7}")
        for b in buckets:
            print(
                f"{b['from_s']:>5}-{b['to_s']:<5} {b['input_appends']:>10,} {_fmt(b['input_gap_ms_p50']):>10} {b['output_commits']:>11,} "
                f"{_fmt(b['output_gap_ms_p50']):>11} {_fmt(b['latency_ms_p50']):>7} {_fmt(b['latency_ms_p99']):>7}"
            )
    if cpu:
        print(f"\ncores used (mean of the samples in each bucket)\n{'bucket s':>11} " + " ".join(f"{role:>9}" for role in (*CPU_ROLES, "idle")))
        for b in cpu:
            print(f"{b['from_s']:>5}-{b['to_s']:<5} " + " ".join(f"{_fmt(b[role], '.2f'):>9}" for role in (*CPU_ROLES, "idle")))
    if windows is not None:
        print(f"\nverdict: {result} (baseline {windows.baseline[0]:.0f}-{windows.baseline[1]:.0f} s, last window {windows.last[0]:.0f}-{windows.last[1]:.0f} s after the first batch)")
    for check in checks:
        mark = {True: "pass", False: "FAIL", None: "n/a "}[check.passed]
        print(f"  {mark}  {check.name}: {check.detail}")
    print(f"report: {settings.root / 'soak-report.json'}")
    if error:
        return 2
    return 0 if result == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
