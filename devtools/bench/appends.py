"""What one ``Topic.append`` costs, and whether that stays so as the topic's log grows.

    python -m deltastreams.devtools.bench.appends build --root /tmp/long --versions 22000     # a long log in ~2 minutes
    python -m deltastreams.devtools.bench.appends compare --root /tmp/long --appends 15        # fresh topic vs that one
    python -m deltastreams.devtools.bench.appends run --minutes 60                             # 10 appends/s, per 10-minute bucket

``build`` makes the soak's input topic (``pageview-events``: 2 partitions, keyed by user_id) with
``--versions`` versions of ``--records`` events each, the way a steady writer leaves it: one data
file per partition and version, a checkpoint every ``delta.checkpointInterval`` versions. It writes
with the cheapest primitives there are (files, then one conditional write of the commit), not
with ``Topic.append``, so it builds the same topic for any version of ``Topic.append`` under test.

``compare`` appends ``--appends`` times to a fresh topic and to the topic under ``--root``,
alternating (a noisy machine slows both alike), through one ``Topic`` each, and prints the first
append's time (a process's first append to a topic loads it) and the median and 90th percentile
of the others.

``run`` appends ``--records`` events every 100 ms (10 appends a second) to ``pageview-events``
under ``--root`` (a new one by default, or one ``build`` made) for ``--minutes``, timing every
``Topic.append``. It prints one row per ``--bucket-minutes`` bucket (appends; wall time p50, p90,
p99, max; CPU time p50 and mean, which waiting for a core on a shared machine does not inflate;
the wall time p50 and max of the checkpointing appends, one in ``delta.checkpointInterval``; the
topic's version, the files of its ``_delta_log`` and the load average) and the verdict: the last
bucket's wall-time p50 within ``--limit`` (1.2x) of the first's, for all appends and for the
checkpointing ones. Every append's time goes to ``<root>/appends.jsonl``.
An append that overruns its tick delays the next one (the schedule does not catch up): what is
measured is the append, not the schedule.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from deltastreams.jobs.pageview import INPUT_TOPIC, input_topic
from deltastreams.jobs.pageview_data import generate_events
from deltastreams.sinks import Topic, append_at, checkpoint_due, checkpoint_if_due, checkpoint_interval, open_table

TICK_S = 0.1


def build(root: str, versions: int, *, records: int = 200, partitions: int = 2, report_every: int = 1000) -> Topic:
    """``pageview-events`` under ``root`` grown by ``versions`` appends of ``records`` events."""
    topic = input_topic(root, partitions)
    table = topic.delta_table()
    version, interval = table.version(), checkpoint_interval(table)
    ends = topic.end_offsets()
    started = time.monotonic()
    for i in range(versions):
        events = generate_events(records, seed=0, first_index=sum(ends.values()))
        files = topic.prepare_files(events, ends)
        committed = append_at(topic.uri, version, files)
        if committed is None:
            raise SystemExit(f"another process appended to {topic.uri} while it was being built")
        version = committed
        for f in files:
            ends[f.partition] = f.max_offset + 1
        checkpoint_if_due(version, interval, lambda v=version: open_table(topic.uri, v))
        if report_every and (i + 1) % report_every == 0:
            print(f"  {i + 1:,} versions in {time.monotonic() - started:,.0f} s", flush=True)
    return topic


def _timed_append(topic: Topic, events) -> tuple[float, float, int]:
    """Wall time and this process's CPU time of one append, in ms, and the version it wrote. On a
    shared machine the wall time includes waiting for a core; the CPU time is what the append
    itself costs."""
    started, cpu = time.perf_counter(), time.process_time()
    version = topic.append(events).version
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000, version


def compare(root: str, appends: int, records: int) -> dict:
    long_topic = Topic.open(root, INPUT_TOPIC)
    fresh = input_topic(tempfile.mkdtemp(prefix="deltastreams-appends-fresh-"), long_topic.partitions)
    events = generate_events(records, seed=1)
    times: dict[str, list[float]] = {"fresh": [], "long": []}
    for _ in range(appends):
        times["fresh"].append(_timed_append(fresh, events)[0])
        times["long"].append(_timed_append(long_topic, events)[0])
    return {
        name: {
            "versions": topic.version(),
            "first_ms": round(ms[0], 1),
            "p50_ms": round(float(np.median(ms[1:] or ms)), 1),
            "p90_ms": round(float(np.percentile(ms[1:] or ms, 90)), 1),
            "ms": [round(m, 1) for m in ms],
        }
        for name, topic, ms in (("fresh", fresh, times["fresh"]), ("long", long_topic, times["long"]))
    }


def _log_files(topic: Topic) -> int:
    try:
        return len(os.listdir(os.path.join(topic.uri, "_delta_log")))
    except FileNotFoundError:  # an object store: not counted
        return -1


def _bucket_row(index: int, times: list[tuple[float, float, bool]], version: int, log_files: int) -> dict:
    wall, cpu, checkpointing = np.array(times).T
    checkpoints = wall[checkpointing.astype(bool)]
    return {
        "bucket": index,
        "appends": len(times),
        "p50_ms": round(float(np.median(wall)), 1),
        "p90_ms": round(float(np.percentile(wall, 90)), 1),
        "p99_ms": round(float(np.percentile(wall, 99)), 1),
        "max_ms": round(float(wall.max()), 1),
        "cpu_p50_ms": round(float(np.median(cpu)), 2),
        "cpu_mean_ms": round(float(cpu.mean()), 2),
        "checkpoint_p50_ms": round(float(np.median(checkpoints)), 1) if len(checkpoints) else None,
        "checkpoint_max_ms": round(float(checkpoints.max()), 1) if len(checkpoints) else None,
        "version": version,
        "log_files": log_files,
        "load": round(os.getloadavg()[0], 1),
    }


def run(root: str, minutes: float, *, records: int = 200, bucket_minutes: float = 10.0, limit: float = 1.2) -> dict:
    topic = input_topic(root)
    bucket_s = bucket_minutes * 60
    buckets: list[dict] = []
    current: list[tuple[float, float, bool]] = []
    interval = checkpoint_interval(topic.delta_table())
    events_appended = sum(topic.end_offsets().values())
    print(
        f"{'bucket':>6} {'minutes':>9} {'appends':>7} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'max ms':>7} {'cpu p50':>7} {'cpu mean':>8} "
        f"{'ckpt p50':>8} {'ckpt max':>8} {'version':>9} {'log files':>9} {'load':>5}",
        flush=True,
    )
    with open(os.path.join(root, "appends.jsonl"), "a") as out:
        started = time.monotonic()
        next_tick = started
        while (now := time.monotonic()) - started < minutes * 60:
            if int((now - started) // bucket_s) > len(buckets):
                buckets.append(_bucket_row(len(buckets), current, topic.version(), _log_files(topic)))
                _print_bucket(buckets[-1], bucket_minutes)
                current = []
            events = generate_events(records, seed=0, first_index=events_appended, event_time_ms=int(time.time() * 1000))
            ms, cpu_ms, version = _timed_append(topic, events)
            events_appended += records
            current.append((ms, cpu_ms, checkpoint_due(version, interval)))
            out.write(json.dumps({"t": round(now - started, 3), "ms": round(ms, 2), "cpu_ms": round(cpu_ms, 2), "version": version}) + "\n")
            next_tick = max(next_tick + TICK_S, time.monotonic())
            time.sleep(max(0.0, next_tick - time.monotonic()))
    if current:
        buckets.append(_bucket_row(len(buckets), current, topic.version(), _log_files(topic)))
        _print_bucket(buckets[-1], bucket_minutes)
    verdict = {"appends": _flatness(buckets, "p50_ms", limit), "checkpointing appends": _flatness(buckets, "checkpoint_p50_ms", limit)}
    print()
    for name, v in verdict.items():
        print(
            f"{name}: last bucket p50 / first bucket p50 = {v['last_p50_ms']} / {v['first_p50_ms']} ms = {v['ratio']:.2f}: "
            f"{'flat' if v['flat'] else 'NOT flat'} (limit {limit}); highest bucket p50 / first = {v['worst_ratio']:.2f}",
            flush=True,
        )
    return {"buckets": buckets, "verdict": verdict, "flat": all(v["flat"] for v in verdict.values())}


def _flatness(buckets: list[dict], key: str, limit: float) -> dict:
    """The last bucket's ``key`` against the first's (buckets without the figure left out: one
    shorter than a checkpoint interval has no checkpointing append)."""
    figures = [b[key] for b in buckets if b[key] is not None]
    first, last = (figures[0], figures[-1]) if figures else (None, None)
    ratio = last / first if first else float("inf")
    worst = max(figures) / first if first else float("inf")
    return {"first_p50_ms": first, "last_p50_ms": last, "ratio": round(ratio, 2), "worst_ratio": round(worst, 2), "limit": limit, "flat": ratio <= limit}


def _print_bucket(row: dict, bucket_minutes: float) -> None:
    span = f"{row['bucket'] * bucket_minutes:g}-{(row['bucket'] + 1) * bucket_minutes:g}"
    print(
        f"{row['bucket']:>6} {span:>9} {row['appends']:>7,} {row['p50_ms']:>7.1f} {row['p90_ms']:>7.1f} {row['p99_ms']:>7.1f} "
        f"{row['max_ms']:>7.1f} {row['cpu_p50_ms']:>7.2f} {row['cpu_mean_ms']:>8.2f} {_ms(row['checkpoint_p50_ms']):>8} {_ms(row['checkpoint_max_ms']):>8} {row['version']:>9,} {row['log_files']:>9,} {row['load']:>5.1f}",
        flush=True,
    )


def _ms(figure: float | None) -> str:
    return "-" if figure is None else f"{figure:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.appends", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="grow pageview-events under --root by --versions versions, fast")
    b.add_argument("--root", required=True)
    b.add_argument("--versions", type=int, required=True)
    b.add_argument("--records", type=int, default=200, help="events per version")
    b.add_argument("--partitions", type=int, default=2)
    c = commands.add_parser("compare", help="Topic.append to a fresh topic and to the one under --root, alternating")
    c.add_argument("--root", required=True)
    c.add_argument("--appends", type=int, default=15)
    c.add_argument("--records", type=int, default=200)
    r = commands.add_parser("run", help="10 appends a second for --minutes, timed, per bucket")
    r.add_argument("--root", help="default: a new directory under the temp directory")
    r.add_argument("--minutes", type=float, required=True)
    r.add_argument("--records", type=int, default=200, help="events per append (200 = 2,000 events/s)")
    r.add_argument("--bucket-minutes", type=float, default=10.0)
    r.add_argument("--limit", type=float, default=1.2, help="the last bucket's p50 may be at most this times the first's")
    args = parser.parse_args(argv)
    if args.command == "build":
        if args.versions <= 0:
            parser.error("--versions must be positive")
        started = time.monotonic()
        topic = build(args.root, args.versions, records=args.records, partitions=args.partitions)
        print(f"built {topic.uri}: version {topic.version():,} in {time.monotonic() - started:,.0f} s")
        return 0
    if args.command == "compare":
        result = compare(args.root, args.appends, args.records)
        for name, row in result.items():
            print(
                f"{name:>6}: version {row['versions']:>7,}  first {row['first_ms']:7.1f} ms, then p50 {row['p50_ms']:7.1f} ms  p90 {row['p90_ms']:7.1f} ms  "
                f"({args.appends} appends of {args.records} events)"
            )
        return 0
    root = args.root or tempfile.mkdtemp(prefix="deltastreams-appends-")
    Path(root).mkdir(parents=True, exist_ok=True)
    print(f"appends: {args.records} events every {TICK_S * 1000:.0f} ms for {args.minutes:g} min to {root}", flush=True)
    result = run(root, args.minutes, records=args.records, bucket_minutes=args.bucket_minutes, limit=args.limit)
    (Path(root) / "appends-report.json").write_text(json.dumps(result, indent=1))
    return 0 if result["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
