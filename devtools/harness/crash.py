"""Kill the pageview job at random moments and inside the commit protocol; check what survives.

    python -m deltastreams.devtools.harness.crash --root /tmp/harness --trials 200
    python -m deltastreams.devtools.harness.crash --root /tmp/harness-ret --trials 200 --retention on
    python -m deltastreams.devtools.harness.crash --root /tmp/harness-alos --trials 20 --guarantee at_least_once
    python -m deltastreams.devtools.harness.crash --root /tmp/harness-corrupt --trials 50 --corrupt
    python -m deltastreams.devtools.harness.crash --root /tmp/harness-kafka --trials 30 --kafka
    python -m deltastreams.devtools.harness.crash --root /tmp/harness-kafka-sink --trials 30 --kafka --kafka-sink
    python -m deltastreams.devtools.harness.crash --root /tmp/harness-s3 --trials 50 --s3 --retention on

Each trial starts ``python -m deltastreams.jobs.pageview run --until-caught-up`` as its own process group and
kills it with SIGKILL: either the driver kills itself at a named point of the commit protocol or
of a retention step (``DELTASTREAMS_CRASH_AT``, every point in turn) or the harness kills the
whole group after a random delay. After the trials, one run without kills finishes the input.
Then the checks of :mod:`deltastreams.devtools.harness.checks` compare what the job left with computations that
share no code with it.

``--retention on`` runs the job with aggressive retention (:data:`RETENTION_SETTINGS`: every step
every second, small thresholds), except that removed files stay on disk for a day, so the checks
can read every record ever committed; ``off`` turns retention off. While the job runs, the
harness archives every commit file before log retention can delete it
(:mod:`deltastreams.devtools.harness.log_archive`). ``--corrupt`` also damages local stores and checkpoints between
trials (:mod:`deltastreams.devtools.harness.damage`): the job must heal them and nothing may change in its outputs.
``--kafka`` starts Apache Kafka (:mod:`deltastreams.devtools.servers.kafka_broker`) and runs the job on its events read
from Kafka (``run --kafka``); the same events also go to the Delta topic under the root, untouched
by the job, where the checks read the input. ``--kafka-sink`` (with a broker of its own unless
``--kafka`` started one) also publishes the counts to Kafka (``run --output-kafka``), kills at
the Kafka sink's points too (``KAFKA_SINK_CRASH_POINTS``: before its transaction and inside it),
and checks that a read_committed reader finds every record of the Delta output in Kafka exactly
once, partition by partition, in order (:mod:`deltastreams.devtools.harness.kafka_sink_check`). ``--s3`` starts an S3-compatible
store (:mod:`deltastreams.devtools.servers.s3_server`) and puts the job's root there, its state in ``--root``; the checks
read a copy of the store taken once the job is done, plus the commit files archived while it ran.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pyarrow.fs as pafs

from deltastreams.devtools.harness.checks import GRACE_MS, WINDOW_MS, Report, check
from deltastreams.devtools.harness.damage import corrupt_local_state, stores_moved_aside
from deltastreams.devtools.harness.log_archive import ARCHIVE, LogArchiver
from deltastreams.devtools.servers.kafka_broker import KafkaBroker
from deltastreams.devtools.harness.kafka_sink_check import check_mirror
from deltastreams.jobs.pageview import APPLICATION_ID, OUTPUT_TOPIC, generate, generate_to_kafka
from deltastreams.devtools.servers.s3_server import S3Server
from deltastreams.streams.runtime import CRASH_POINTS as POINTS
from deltastreams.streams.runtime import KAFKA_SINK_CRASH_POINTS

EVENTS_PER_SECOND = 300
"""Event-time rate of the harness's input: slow enough that thousands of events span many windows,
so windows close (and emit-final emits) during a run."""
RETENTION_POINT_PREFIX = "retention_"
"""Kill points inside retention steps (``deltastreams.sinks.retention.KILL_POINTS``), used with ``--retention on``."""
RETENTION_SETTINGS = {
    "enabled": "true",
    "purge_interval_ms": 1000,
    "compaction_interval_ms": 1000,
    "compaction_min_files": 3,
    "tombstone_retention_ms": 10_000,  # of stream time: the input's event time advances 300 events/s
    "optimize_interval_ms": 1000,
    "optimize_min_files": 3,
    "optimize_target_file_bytes": 65_536,
    "file_cleanup_interval_ms": 1000,
    "orphan_file_delay_ms": 30_000,  # batches take about a second here, ten under load
    "removed_file_delay_ms": 86_400_000,  # the checks read every file ever committed
    "log_cleanup_interval_ms": 1000,
    "log_keep_versions": 20,  # the archive copies new commit files every 0.1 s
}
"""Retention every second or so (every few batches at the harness's 100 ms commit interval)."""


def append_events(root: str, events: int, *, seed: int, appends: int, kafka: str | None = None) -> None:
    """Out-of-order pageviews (10% up to 20 s late), at the harness's event-time rate; with
    ``kafka``, the same events to the Kafka topic too, append by append."""
    per_append = -(-events // max(appends, 1))
    for start in range(0, events, per_append):
        n = min(per_append, events - start)
        generate(root, n, seed=seed, late_fraction=0.1, max_lateness_ms=20_000, events_per_second=EVENTS_PER_SECOND)
        if kafka:
            generate_to_kafka(kafka, n, seed=seed, late_fraction=0.1, max_lateness_ms=20_000, events_per_second=EVENTS_PER_SECOND)


def job_command(
    root: str,
    guarantee: str,
    emit: str,
    max_records: int,
    commit_interval_ms: int = 100,
    *,
    retention: str = "off",
    kafka: str | None = None,
    output_kafka: str | None = None,
    state_dir: Path | None = None,
) -> list[str]:
    command = [
        sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", root, "--until-caught-up",
        "--guarantee", guarantee, "--emit", emit, "--grace-ms", str(GRACE_MS), "--window-ms", str(WINDOW_MS),
        "--commit-interval-ms", str(commit_interval_ms), "--max-records-per-batch", str(max_records), "--timeout-s", "600",
    ]
    settings = RETENTION_SETTINGS if retention == "on" else {"enabled": "false"}
    for key, value in settings.items():
        command += ["--set", f"retention.{key}={value}"]
    if kafka:
        command += ["--kafka", kafka]
    if output_kafka:
        command += ["--output-kafka", output_kafka]
    if state_dir is not None:
        command += ["--set", f"state_dir={state_dir}"]
    return command


def run_once(
    command: list[str], *, crash_at: str | None, kill_after_s: float | None, log, archiver: Callable[[], LogArchiver] | None = None, environment: dict[str, str] | None = None
) -> str:
    """Run the job once (in ``environment``, by default this process's), archiving its commit
    files meanwhile (by default under its root); returns how it ended: 'finished', 'crash-point'
    or 'killed'."""
    env = dict(os.environ if environment is None else environment)
    env.pop("DELTASTREAMS_CRASH_AT", None)
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    root = command[command.index("--root") + 1]
    with (archiver or (lambda: LogArchiver(root)))():
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
        try:
            process.wait(timeout=kill_after_s if kill_after_s is not None else 900)
            ended = "finished" if process.returncode == 0 else ("crash-point" if process.returncode == -signal.SIGKILL else f"failed rc={process.returncode}")
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            ended = "killed"
    try:  # the JVM and Python workers go with their driver; make sure of it
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    time.sleep(0.5)
    return ended


def run_trials(
    root: str,
    *,
    trials: int,
    guarantee: str,
    emit: str,
    max_records: int,
    seed: int,
    log,
    append_per_trial: int = 0,
    appends_per_trial: int = 1,
    only_points: tuple[str, ...] | None = None,
    named_fraction: float = 0.3,
    retention: str = "off",
    corrupt: bool = False,
    kafka: str | None = None,
    kafka_sink: str | None = None,
    local: Path | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> Report:
    """``append_per_trial`` new events arrive before every trial, so each trial has work to be
    killed in, however many trials there are, in ``appends_per_trial`` appends (Delta versions,
    so about as many batches). ``only_points``: kill at these named points only (and at random).
    After one trial per point, a trial is armed at a named point with probability
    ``named_fraction``, else killed at random. ``corrupt``: damage local state between trials.
    ``local``: with an object-store ``root`` (reached through ``filesystem``), the local
    directory for the job's state and the harness's log archive. ``kafka_sink``: the cluster the
    job also publishes its counts to (and the Kafka sink's kill points join the others)."""
    rng = random.Random(seed)
    report = Report(guarantee, emit, retention, source="kafka" if kafka else "delta", sink="delta + kafka" if kafka_sink else "delta")
    state_dir = Path(local or root) / "state"
    command = job_command(
        root, guarantee, emit, max_records, retention=retention, kafka=kafka, output_kafka=kafka_sink, state_dir=state_dir if local else None
    )

    def archiver() -> LogArchiver:
        # An object store is polled less often: each poll lists every table's log over HTTP.
        return LogArchiver(root, interval_s=0.1 if local is None else 0.3, filesystem=filesystem, archive=Path(local or root) / ARCHIVE)

    # at_least_once has no decision point: it publishes, then records its progress.
    points = POINTS if guarantee == "exactly_once" else tuple(p for p in POINTS if p != "after_commit")
    if kafka_sink:
        points += KAFKA_SINK_CRASH_POINTS
    if retention != "on":
        points = tuple(p for p in points if not p.startswith(RETENTION_POINT_PREFIX))
    elif not any(p.startswith(RETENTION_POINT_PREFIX) for p in points):
        print("note: the job defines no retention kill points; only random kills hit retention steps", file=log, flush=True)
    if only_points:
        unknown = sorted(set(only_points) - set(points))
        if unknown:
            raise ValueError(f"no such kill point(s) here: {unknown}; known: {', '.join(points)}")
        points = tuple(only_points)
    finished_s: list[float] = []  # how long the runs that ended by themselves took
    for trial in range(trials):
        if trial < len(points) or rng.random() < named_fraction:
            point = points[trial % len(points)] if trial < len(points) else rng.choice(points)
            # A retention step reaches its points once or twice per run at most: kill at the first.
            nth = 1 if point.startswith(RETENTION_POINT_PREFIX) else rng.randint(1, 3)
            crash, delay, label = f"{point}@{nth}", None, point
        else:
            crash, delay, label = None, random_kill_delay(rng, finished_s), "random"
        if append_per_trial and trial:
            append_events(root, append_per_trial, seed=seed + trial, appends=appends_per_trial, kafka=kafka)
        if corrupt and trial:
            for what in corrupt_local_state(state_dir / APPLICATION_ID, rng):
                report.corruptions[what] += 1
                print(f"trial {trial + 1}: damaged {what}", file=log, flush=True)
        print(f"trial {trial + 1}/{trials}: {label if crash is None else crash}", file=log, flush=True)
        started = time.monotonic()
        ended = run_once(command, crash_at=crash, kill_after_s=delay, log=log, archiver=archiver)
        report.trials += 1
        if ended == "finished":
            report.runs_finished_early += 1
            finished_s.append(time.monotonic() - started)
        elif ended.startswith("failed"):
            report.violations.append(f"trial {trial + 1} ({label}) failed instead of crashing: {ended}")
        else:
            report.kills[label] += 1
    ended = run_once(command, crash_at=None, kill_after_s=None, log=log, archiver=archiver)
    if ended != "finished":
        report.violations.append(f"the final run did not finish: {ended}")
    report.stores_moved_aside = stores_moved_aside(state_dir / APPLICATION_ID)
    return report


def random_kill_delay(rng: random.Random, finished_s: list[float]) -> float:
    """When a random kill comes: anywhere in a run, as long as the runs that ended by themselves
    took (their median; 20 s before any did). A fixed 10-45 s, from when a start took ~20 s, let
    every run of 2026-11-30 finish first (they end in 1-3 s once caught up before their session):
    the 200-trial harness had no random kill at all."""
    typical = sorted(finished_s)[len(finished_s) // 2] if finished_s else 20.0
    return rng.uniform(0.05, 1.0) * typical


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="a fresh directory for the run's data")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--appends", type=int, default=8)
    parser.add_argument("--append-per-trial", type=int, default=1_500, help="new events before each trial after the first")
    parser.add_argument("--max-records-per-batch", type=int, default=1_500)
    parser.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    parser.add_argument("--emit", choices=("revisions", "final"), default="revisions")
    parser.add_argument("--retention", choices=("on", "off"), default="off", help="run the job with aggressive retention settings")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--appends-per-trial", type=int, default=1, help="the new events of a trial in this many appends (more batches per run)")
    parser.add_argument("--points", default=None, help="comma-separated kill points to use instead of all (random kills still happen)")
    parser.add_argument("--named-fraction", type=float, default=0.3, help="after one trial per point: the share of trials armed at a named point")
    parser.add_argument("--corrupt", action="store_true", help="damage local stores and checkpoints between trials")
    parser.add_argument("--kafka", action="store_true", help="read the input from an Apache Kafka broker the harness starts")
    parser.add_argument(
        "--kafka-sink", action="store_true",
        help="also publish the counts to Kafka (run --output-kafka), kill inside the Kafka sink too, and check Kafka against the Delta output",
    )
    parser.add_argument(
        "--s3", action="store_true",
        help="put the job's root on an S3-compatible store the harness starts (SeaweedFS); --root is then the local directory for "
        "state, the log archive and the copy of the store the checks read",
    )
    parser.add_argument("--log", default=None, help="file for the job's output (default: <root>/harness.log)")
    args = parser.parse_args(argv)
    root = str(Path(args.root).absolute())
    if (Path(root) / "topics").exists():
        print(f"error: {root} already holds topics; give a fresh directory", file=sys.stderr)
        return 2
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(KafkaBroker.start()).bootstrap_servers if args.kafka or args.kafka_sink else None
        kafka, kafka_sink = (broker if args.kafka else None), (broker if args.kafka_sink else None)
        s3 = stack.enter_context(S3Server.start()) if args.s3 else None
        report = _harness(root, args, kafka, kafka_sink, s3)
    report.seconds = time.monotonic() - started
    print(report.summary())
    result = asdict(report)
    result["kills"] = dict(report.kills)
    result["corruptions"] = dict(report.corruptions)
    (Path(root) / "harness-report.json").write_text(json.dumps(result, indent=2))
    return 1 if (report.violations and args.guarantee == "exactly_once") else 0


def _harness(root: str, args: argparse.Namespace, kafka: str | None, kafka_sink: str | None, s3: S3Server | None) -> Report:
    """``root`` is local; with ``s3``, the job's root is on the store and ``root`` gets its state,
    the log archive and, once the job is done, a copy of the store for the checks."""
    job_root, filesystem = root, None
    if s3 is not None:
        job_root, filesystem = s3.uri("harness"), s3.filesystem()
        # This process and every job it starts reach the store through the AWS variables.
        os.environ.update(s3.storage_options)
    append_events(job_root, args.events, seed=args.seed, appends=args.appends, kafka=kafka)
    Path(root).mkdir(parents=True, exist_ok=True)
    with open(args.log or Path(root) / "harness.log", "a") as log:
        report = run_trials(
            job_root,
            trials=args.trials,
            guarantee=args.guarantee,
            emit=args.emit,
            max_records=args.max_records_per_batch,
            seed=args.seed,
            log=log,
            append_per_trial=args.append_per_trial,
            appends_per_trial=args.appends_per_trial,
            only_points=tuple(args.points.split(",")) if args.points else None,
            named_fraction=args.named_fraction,
            retention=args.retention,
            corrupt=args.corrupt,
            kafka=kafka,
            kafka_sink=kafka_sink,
            local=Path(root) if s3 is not None else None,
            filesystem=filesystem,
        )
    if s3 is not None:
        report.storage = "s3 (SeaweedFS)"
        s3.download(job_root, root)
    check(root, report)
    if kafka_sink:
        mirror = check_mirror(root, OUTPUT_TOPIC, kafka_sink, key_column="category", value_column="count")
        report.kafka_sink_records = mirror.records
        report.kafka_aborted_records = mirror.aborted_records
        report.violations += [f"Kafka sink: {v}" for v in mirror.violations]
    return report


if __name__ == "__main__":
    sys.exit(main())
