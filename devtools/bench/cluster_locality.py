"""What state costs on a cluster of several hosts: where tasks run, what they read back, and what
losing a host costs, with and without standby copies.

    python -m deltastreams.devtools.bench.cluster_locality                              # sticky tasks, no standbys
    python -m deltastreams.devtools.bench.cluster_locality --sticky off                 # Spark places tasks as it likes
    python -m deltastreams.devtools.bench.cluster_locality --kill-host 2 --standbys 0   # lose worker 2 after batch 4
    python -m deltastreams.devtools.bench.cluster_locality --kill-host 2 --standbys 1

Brings up a test cluster (:mod:`deltastreams.devtools.servers.netns_cluster`: a master, three one-core worker hosts and a
driver host in network namespaces of their own, the root on an S3 store), appends ``--events``
pageviews of ``--users`` users in ``--appends`` appends, and runs :mod:`deltastreams.devtools.bench.user_counts` (a count per
user: one store entry per user seen, over ``--partitions`` tasks) with spark-submit from the
driver host, one append per batch. Reported from the job's metrics file: changelog entries read
back per batch (the first ``--warm-up`` batches apart: a task's first batch on a host restores
what earlier runs left, here nothing), and with ``--kill-host``, for every task that ran on the
lost host: the time from the kill to its first committed batch elsewhere and the entries that
batch read back. Then every user's count is checked against the input (exactly once).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from deltastreams.devtools.bench import user_counts
from deltastreams.devtools.servers.netns_cluster import MultiHostCluster, spark_home

SUBMIT_TIMEOUT_S = 1800


def _batches(metrics_file: Path) -> list[dict]:
    if not metrics_file.exists():
        return []
    return [json.loads(line) for line in metrics_file.read_text().splitlines() if line.endswith("}")]


def restored_per_batch(batches: list[dict], subtopology: int) -> list[int]:
    return [b["restored_entries"] for b in batches if b["subtopology"] == subtopology]


def failover(batches: list[dict], killed_address: str, killed_at: float) -> dict[str, dict]:
    """Per task that last ran on the killed host before ``killed_at``: seconds from the kill to its
    first batch committed elsewhere, and the changelog entries that batch read back."""
    last_place: dict[str, str] = {}
    moved: dict[str, dict] = {}
    for batch in batches:
        for partition, location in batch.get("task_locations", {}).items():
            task = f"{batch['subtopology']}_{partition}"
            if batch["time"] <= killed_at:
                last_place[task] = location
            elif task not in moved and f"_{killed_address}_" in last_place.get(task, "") and killed_address not in location:
                moved[task] = {
                    "seconds": round(batch["time"] - killed_at, 2),
                    "restored_entries": batch.get("task_restored_entries", {}).get(partition, 0),
                    "to": location,
                }
    for task, where in last_place.items():
        if f"_{killed_address}_" in where and task not in moved:
            moved[task] = {"seconds": None, "restored_entries": None, "to": None}  # no batch after the kill
    return moved


def _kill_when(cluster: MultiHostCluster, metrics_file: Path, host: int, after_batch: int, done: threading.Event, killed: dict) -> None:
    """Kill worker ``host`` once the counting sub-topology committed ``after_batch`` batches."""
    while not done.is_set():
        if len(restored_per_batch(_batches(metrics_file), 1)) >= after_batch:
            killed["at"] = time.time()
            killed["pids"] = cluster.kill_host(host)
            return
        time.sleep(0.05)


def run(cluster: MultiHostCluster, args: argparse.Namespace, work: Path) -> dict:
    root = cluster.uri(f"locality-{int(time.time())}")
    options = [a for k, v in cluster.storage_options.items() for a in ("--set", f"storage_options.{k}={v}")]
    generate = cluster.run_on_driver(
        [sys.executable, "-m", "deltastreams.jobs.pageview", "generate", "--root", root, "--events", str(args.events), "--batches", str(args.appends),
         "--source-partitions", "3", "--seed", "5", "--users", str(args.users), *options],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if generate.returncode:
        raise SystemExit(f"generate failed: {generate.stderr[-2000:]}")
    metrics_file = work / "metrics.jsonl"
    submit = [
        str(Path(spark_home()) / "bin" / "spark-submit"), "--master", cluster.master_url, "--executor-memory", "1g",
        "--conf", "spark.task.maxFailures=8",
        user_counts.__file__, "run", "--root", root, "--until-caught-up", "--partitions", str(args.partitions),
        "--commit-interval-ms", "500", "--max-records-per-batch", str(-(-args.events // args.appends)),
        "--metrics-file", str(metrics_file), "--log-file", str(work / "driver.log"),
        "--set", f"sticky_tasks={'true' if args.sticky == 'on' else 'false'}", "--set", f"num_standby_replicas={args.standbys}", *options,
    ]  # fmt: skip
    done, killed = threading.Event(), {}
    killer = None
    if args.kill_host:
        killer = threading.Thread(target=_kill_when, args=(cluster, metrics_file, args.kill_host, args.kill_after_batch, done, killed), daemon=True)
        killer.start()
    started = time.monotonic()
    job = cluster.run_on_driver(submit, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S, cwd=work)
    done.set()
    seconds = time.monotonic() - started
    if job.returncode:
        raise SystemExit(f"the job failed (rc {job.returncode}): {job.stderr[-3000:]}")
    batches = _batches(metrics_file)
    restored = restored_per_batch(batches, 1)
    report = {
        "keys_of_state": len(user_counts.expected_counts(root, cluster.storage_options)),
        "sticky": args.sticky, "standbys": args.standbys, "events": args.events, "partitions": args.partitions, "job_seconds": round(seconds, 1),
        "restored_per_batch": restored, "steady_restored": sum(restored[args.warm_up:]),
        "standby_entries": sum(b.get("standby_entries", 0) for b in batches if b["subtopology"] == 1),
        "executors": sorted({loc for b in batches for loc in b.get("task_locations", {}).values()}),
    }  # fmt: skip
    if killed:
        address = cluster.worker(args.kill_host).address
        report["killed"] = {"host": args.kill_host, "address": address, "processes": len(killed["pids"])}
        report["failover"] = failover(batches, address, killed["at"])
    wrong = user_counts.mismatches(root, cluster.storage_options)
    report["users_counted_wrong"] = len(wrong)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.cluster_locality", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", help="the cluster's directory (default: a new temporary one)")
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--appends", type=int, default=10)
    parser.add_argument("--users", type=int, default=200_000, help="distinct keys: the state holds one entry per user seen")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--sticky", choices=("on", "off"), default="on")
    parser.add_argument("--standbys", type=int, default=0)
    parser.add_argument("--warm-up", type=int, default=2, help="batches left out of the steady figure")
    parser.add_argument("--kill-host", type=int, default=0, help="kill every process of this worker host (1-3) mid-run")
    parser.add_argument("--kill-after-batch", type=int, default=4)
    args = parser.parse_args(argv)
    directory = Path(args.dir or tempfile.mkdtemp(prefix="deltastreams-locality-"))
    with MultiHostCluster(directory / "cluster", workers=3) as cluster:
        report = run(cluster, args, directory)
    print(json.dumps(report, indent=2))
    (directory / "report.json").write_text(json.dumps(report, indent=2))
    return 1 if report["users_counted_wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
