"""End-to-end latency and commit cadence of the pageview job on a steady stream.

    python -m deltastreams.devtools.bench.latency --rate 2000 --interval-ms 100 --seconds 600   # the cadence measure

:class:`deltastreams.jobs.steady.SteadyGenerator` appends ``rate`` events per second, in appends every
100 ms, with event time = the wall-clock time of the append (no late records). The job runs
meanwhile. An output revision carries the largest event time of its window so far, i.e. the
append time of the newest input record that produced it, so its latency is the commit time of the
output's Delta version minus that timestamp. The cadence is the gap between consecutive output
commits: its median over the run, and its drift (median over the last tenth of the run against the
first tenth: a job whose per-trigger cost grows with its history drifts above 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from deltastreams.conf import StreamsConfig
from deltastreams.jobs.pageview import INPUT_TOPIC, OUTPUT_TOPIC, build_topology
from deltastreams.jobs.pageview_data import VALUE_TYPE
from deltastreams.jobs.steady import SteadyGenerator
from deltastreams.sinks import Topic, create_topic, files_added
from deltastreams.streams.app import StreamsApp


def _commit_times(output: Topic) -> dict[int, int]:
    """Commit time (epoch ms) of every output version after the table's creation."""
    return {h["version"]: h["timestamp"] for h in output.delta_table().history() if h["version"] > 0}


def output_latencies(root: str) -> np.ndarray:
    """Latency (ms) of every committed output record: its version's commit time minus its
    timestamp."""
    output = Topic.open(root, OUTPUT_TOPIC)
    commit_time = _commit_times(output)
    latencies = []
    for version in sorted(commit_time):
        files = files_added(output.uri, version - 1, version)
        if files:
            stamps = output.read_files(files).column("timestamp").to_numpy()
            latencies.append(commit_time[version] - stamps)
    return np.concatenate(latencies) if latencies else np.zeros(0)


def commit_cadence(root: str) -> dict:
    """Median gap (ms) between consecutive output commits, and its drift (last tenth of the
    commits over the first tenth)."""
    times = np.array(sorted(_commit_times(Topic.open(root, OUTPUT_TOPIC)).values()), dtype=np.float64)
    gaps = np.diff(times)
    if gaps.size < 10:
        return {"commits": int(times.size), "gap_p50_ms": float(np.median(gaps)) if gaps.size else None, "drift": None}
    tenth = gaps.size // 10
    first, last = float(np.median(gaps[:tenth])), float(np.median(gaps[-tenth:]))
    return {
        "commits": int(times.size),
        "gap_p50_ms": float(np.median(gaps)),
        "gap_p99_ms": float(np.percentile(gaps, 99)),
        "gap_first_tenth_ms": first,
        "gap_last_tenth_ms": last,
        "drift": last / first if first else None,
    }


def steady_latency(spark, root: str, *, guarantee: str, interval_ms: int, rate: int, duration_s: float) -> dict:
    topic = create_topic(root, INPUT_TOPIC, partitions=2, key_type=pa.string(), value_type=VALUE_TYPE, key_column="user_id")
    config = StreamsConfig.load(
        {
            "application_id": f"latency-{guarantee}-{interval_ms}",
            "root": root,
            "processing_guarantee": guarantee,
            "commit_interval_ms": interval_ms,
            "num_partitions": 3,
            "max_records_per_batch": 1_000_000,
        }
    )
    app = StreamsApp(build_topology(), config, spark=spark)
    app.start()  # the topology's types are known, so every query starts now
    time.sleep(2.0)  # let the queries settle: start-up is not latency
    appended = SteadyGenerator(topic, rate, duration_s=duration_s).run()  # the queries run in Spark's threads meanwhile
    spark_durations = _spark_durations(app.query.recentProgress if app.query is not None else [])
    app.run(until_caught_up=True, timeout_s=600)
    profile = {"trigger_ms": spark_durations, **_phases(app.history), "drift": _phase_drift(app.history)}
    latencies = output_latencies(root)
    cadence = commit_cadence(root)
    if latencies.size == 0:
        return {"p50": None, "p95": None, "p99": None, "records": 0, "events": appended.events, "cadence": cadence, "profile": profile}
    p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
    return {
        "p50": float(p50), "p95": float(p95), "p99": float(p99), "records": int(latencies.size), "events": appended.events,
        "cadence": cadence, "profile": profile,
    }


def _spark_durations(progress: list) -> dict[str, float]:
    """Median of each of Spark's own per-trigger durations (ms) over its recent triggers:
    ``addBatch`` is our trigger's work, the rest Spark's (``walCommit`` and ``commitOffsets``:
    its offset and commit logs)."""
    durations = [p["durationMs"] for p in progress if p.get("durationMs")]
    names = sorted({k for d in durations for k in d})
    return {k: float(np.median([d.get(k, 0) for d in durations])) for k in names}


def _phases(history) -> dict[str, dict[str, float]]:
    """Median milliseconds per phase of the batches that had input, per sub-topology: the
    driver's (plan, tasks, consolidate, decide, publish) and the tasks' (summed over them)."""
    out: dict[str, dict[str, float]] = {}
    for side, field in (("driver", "phases"), ("tasks", "task_phases")):
        per: dict[str, list[float]] = {}
        for m in history:
            if m.records_in:
                for name, seconds in getattr(m, field).items():
                    per.setdefault(f"{m.subtopology}:{name}", []).append(seconds * 1000)
        out[f"{side}_ms"] = {k: round(float(np.median(v)), 1) for k, v in sorted(per.items())}
    whole: dict[int, float] = {}
    for m in history:
        if m.records_in:
            whole[m.batch_id] = max(whole.get(m.batch_id, 0.0), m.total_seconds * 1000)
    out["plan_to_last_commit_ms"] = round(float(np.median(list(whole.values()))), 1) if whole else None
    return out


def _phase_drift(history, min_change_ms: float = 2.0) -> dict[str, tuple[float, float]]:
    """Where a drift comes from: each phase's median over the first tenth of the triggers with
    input and over the last tenth, for the phases that changed by more than ``min_change_ms``."""
    batches = sorted({m.batch_id for m in history if m.records_in})
    if len(batches) < 20:
        return {}
    tenth = len(batches) // 10
    first, last = set(batches[:tenth]), set(batches[-tenth:])
    before = _phases([m for m in history if m.batch_id in first])
    after = _phases([m for m in history if m.batch_id in last])
    drift = {}
    for side in ("driver_ms", "tasks_ms"):
        for name, ms in before[side].items():
            late = after[side].get(name, 0.0)
            if abs(late - ms) > min_change_ms:
                drift[f"{side[:-3]} {name}"] = (ms, late)
    whole = (before["plan_to_last_commit_ms"], after["plan_to_last_commit_ms"])
    if None not in whole and abs(whole[1] - whole[0]) > min_change_ms:
        drift["plan to last commit"] = whole
    return drift


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=2000, help="input events per second")
    parser.add_argument("--interval-ms", type=int, default=100, help="commit interval")
    parser.add_argument("--seconds", type=float, default=600, help="how long the generator appends")
    parser.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    parser.add_argument("--root", help="a new directory (default: a temporary one)")
    args = parser.parse_args(argv)
    from deltastreams.streams.runtime import spark_session

    root = args.root or tempfile.mkdtemp(prefix="deltastreams-cadence-")
    # Spark's own output (its warnings at each query's stop, Python workers' stderr) stays out of the report.
    spark = spark_session(StreamsConfig.load({"application_id": "bench-latency"}), log_file=f"{root}/spark.log")
    stats = steady_latency(spark, root, guarantee=args.guarantee, interval_ms=args.interval_ms, rate=args.rate, duration_s=args.seconds)
    c = stats["cadence"]
    print(f"{args.rate:,} events/s for {args.seconds:.0f} s at {args.interval_ms} ms ({args.guarantee}), root {root} (Spark's log: {root}/spark.log)")
    if stats["p50"] is not None:
        print(f"  end-to-end latency p50 {stats['p50']:.0f} ms, p95 {stats['p95']:.0f} ms, p99 {stats['p99']:.0f} ms over {stats['records']:,} output records")
    if c.get("drift") is not None:
        print(
            f"  output commits: {c['commits']:,}, median gap {c['gap_p50_ms']:.0f} ms (p99 {c['gap_p99_ms']:.0f} ms); "
            f"first tenth {c['gap_first_tenth_ms']:.0f} ms, last tenth {c['gap_last_tenth_ms']:.0f} ms: drift {c['drift']:.2f}x"
        )
    p = stats["profile"]
    print(f"  Spark's part of a trigger (median ms): {p['trigger_ms']}")
    print(f"  our part of a trigger, plan to last commit (median ms): {p['plan_to_last_commit_ms']}")
    print(f"  driver phases per sub-topology (median ms): {p['driver_ms']}")
    print(f"  task phases per sub-topology, summed over its tasks (median ms): {p['tasks_ms']}")
    if p["drift"]:
        print("  phases that changed from the first tenth of the triggers to the last (median ms): " + ", ".join(f"{k} {a:.0f} -> {b:.0f}" for k, (a, b) in p["drift"].items()))
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
