"""The crash harness on a cluster of several hosts: lose worker hosts while the pageview job runs.

    python -m deltastreams.devtools.harness.cluster --root /tmp/cluster-harness --trials 12
    python -m deltastreams.devtools.harness.cluster --root /tmp/cluster-harness-sb --trials 12 --standbys 1

Brings up the multi-host test cluster (:mod:`deltastreams.devtools.servers.netns_cluster`: a master, three one-core worker
hosts and a driver host, each in a network namespace of its own; the job's root on the S3 store
of the cluster, every host's state on its own disk). Each trial appends new events, submits
``jobs/pageview.py run --until-caught-up`` from the driver host with spark-submit, and then
either kills every process of a random worker host after a random delay (``host``: the job goes
on, its lost tasks move to the other hosts and catch up from their changelogs; the host is
started again, with its disk, after the run), or kills the driver's whole process group after a
random delay (``driver``), or arms a named kill point of the commit protocol in the driver.
After the trials, one run without kills finishes the input; then the checks of
:mod:`deltastreams.devtools.harness.checks` run on a copy of the store (and the commit files archived meanwhile),
as in ``deltastreams.devtools.harness.crash --s3``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from deltastreams.devtools.harness.crash import append_events, job_command, run_once
from deltastreams.devtools.harness.checks import Report, check
from deltastreams.devtools.harness.log_archive import ARCHIVE, LogArchiver
from deltastreams.jobs.pageview import __file__ as pageview_file
from deltastreams.devtools.servers.netns_cluster import MultiHostCluster, spark_home
from deltastreams.streams.runtime import CRASH_POINTS

KINDS = ("host", "host", "driver", "point")
"""Half the trials lose a worker host."""


def submit_command(cluster: MultiHostCluster, root: str, max_records: int, standbys: int) -> list[str]:
    """The harness's job command as spark-submit on the driver host, reaching the store with the
    cluster's storage options."""
    job = job_command(root, "exactly_once", "revisions", max_records, commit_interval_ms=200)
    arguments = job[job.index("run"):]
    options = [a for k, v in cluster.storage_options.items() for a in ("--set", f"storage_options.{k}={v}")]
    submit = [
        str(Path(spark_home()) / "bin" / "spark-submit"), "--master", cluster.master_url, "--executor-memory", "1g",
        # a lost executor's tasks are retried elsewhere; those failures do not count (Spark's rule), others may recur a few times
        "--conf", "spark.task.maxFailures=8",
        pageview_file, *arguments, "--set", f"num_standby_replicas={standbys}", *options,
    ]  # fmt: skip
    return cluster.on_driver(submit)


def _kill_host_after(cluster: MultiHostCluster, host: int, delay_s: float, cancelled: threading.Event, killed: list) -> None:
    if not cancelled.wait(delay_s):
        killed.append((host, len(cluster.kill_host(host))))


def run_trials(cluster: MultiHostCluster, root: str, local: Path, args: argparse.Namespace, log) -> Report:
    rng = random.Random(args.seed)
    report = Report("exactly_once", "revisions", "off", source="delta", sink="delta")
    report.storage = "s3 (SeaweedFS), multi-host cluster"
    command = submit_command(cluster, root, args.max_records_per_batch, args.standbys)
    environment = cluster.driver_environment()

    def archiver() -> LogArchiver:
        return LogArchiver(root, interval_s=0.3, filesystem=cluster.filesystem(), archive=local / ARCHIVE)

    for trial in range(args.trials):
        if trial:
            append_events(root, args.append_per_trial, seed=args.seed + trial, appends=2)
        kind = KINDS[trial % len(KINDS)] if trial < len(KINDS) else rng.choice(KINDS)
        crash, delay, label, killed = None, None, kind, []
        cancelled = threading.Event()
        if kind == "host":
            host = rng.randint(1, cluster.workers)
            # start-up takes ~20-60 s here (spark-submit, executors); kill while batches run
            threading.Thread(target=_kill_host_after, args=(cluster, host, rng.uniform(25.0, 70.0), cancelled, killed), daemon=True).start()
        elif kind == "driver":
            delay = rng.uniform(25.0, 80.0)
        else:
            point = rng.choice(CRASH_POINTS)
            crash, label = f"{point}@{rng.randint(1, 3)}", f"point {point}"
        print(f"trial {trial + 1}/{args.trials}: {label}", file=log, flush=True)
        ended = run_once(command, crash_at=crash, kill_after_s=delay, log=log, archiver=archiver, environment=environment)
        cancelled.set()
        if crash and ended == f"failed rc={128 + 9}":
            # spark-submit's JVM outlives the Python driver that killed itself and exits with the
            # shell's code for a SIGKILLed child (128 + 9), where a plain run ends by SIGKILL
            ended = "crash-point"
        report.trials += 1
        if kind == "host":
            if killed:
                report.kills[f"host {killed[0][0]} ({killed[0][1]} processes)" if args.verbose else "host"] += 1
            if ended != "finished":
                report.violations.append(f"trial {trial + 1}: the job did not survive losing a worker host: {ended}")
            for n in range(1, cluster.workers + 1):
                cluster.ensure_worker(n)  # the lost host comes back (its disk kept) for the next trials
        elif ended == "finished":
            report.runs_finished_early += 1
        elif ended.startswith("failed"):
            report.violations.append(f"trial {trial + 1} ({label}) failed instead of crashing: {ended}")
        else:
            report.kills[label] += 1
    ended = run_once(command, crash_at=None, kill_after_s=None, log=log, archiver=archiver, environment=environment)
    if ended != "finished":
        report.violations.append(f"the final run did not finish: {ended}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.harness.cluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="a fresh local directory: the cluster, logs, the archive and the store's copy")
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--append-per-trial", type=int, default=3_000)
    parser.add_argument("--max-records-per-batch", type=int, default=1_500)
    parser.add_argument("--standbys", type=int, default=0, help="num_standby_replicas of the job")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="count host kills per host")
    parser.add_argument(
        "--cluster", metavar="DIR",
        help="run on the cluster brought up with `python -m deltastreams.devtools.servers.netns_cluster up --dir DIR` (left running) "
        "instead of bringing up one of its own",
    )
    args = parser.parse_args(argv)
    local = Path(args.root).absolute()
    if (local / "topics").exists():
        print(f"error: {local} already holds topics; give a fresh directory", file=sys.stderr)
        return 2
    local.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    running = contextlib.nullcontext(MultiHostCluster.load(args.cluster)) if args.cluster else MultiHostCluster(local / "cluster", workers=3)
    with running as cluster, open(local / "harness.log", "a") as log:
        root = cluster.uri("harness")
        os.environ.update(cluster.storage_options)  # this process (appends, archive) reaches the store
        append_events(root, args.events, seed=args.seed, appends=4)
        report = run_trials(cluster, root, local, args, log)
        cluster.download(root, local)
    check(str(local), report)
    report.seconds = time.monotonic() - started
    print(report.summary())
    result = asdict(report)
    result["kills"] = dict(report.kills)
    result["corruptions"] = dict(report.corruptions)
    (local / "harness-report.json").write_text(json.dumps(result, indent=2))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
