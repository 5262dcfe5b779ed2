"""Whole-process comparison: the pageview job's process against a plain Spark Structured
Streaming job's process over the same Delta topic, each started from the command line as a user
would and timed from launch to exit (JVM start, Spark session, query start, processing, stop).

    python -m deltastreams.devtools.bench.process --events 5000000 16000000 [--reps 1]

Both read the same generated input with batches of at most 1M records at a 1 s commit interval;
runs alternate between the two systems. Prints seconds and events/s per run and the ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deltastreams.devtools.bench.suite import run_root
from deltastreams.jobs.pageview import generate

INTERVAL_MS, BATCH = 1000, 1_000_000


def _timed(command: list[str], log_path: Path) -> float:
    started = time.perf_counter()
    with open(log_path, "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)
    return time.perf_counter() - started


def commands(root: str, events: int) -> dict[str, list[str]]:
    common = ["--commit-interval-ms", str(INTERVAL_MS), "--max-records-per-batch", str(BATCH)]
    return {
        "deltastreams": [sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", root, "--until-caught-up", *common],
        "plain_spark": [sys.executable, "-m", "deltastreams.devtools.bench.plain_pageview", "--root", root, "--events", str(events), *common],
    }


def compare(base: Path, events: int, reps: int) -> dict:
    input_root = base / f"input-{events}"
    if not (input_root / "topics").exists():
        print(f"generating {events:,} events ...", flush=True)
        generate(str(input_root), events, seed=1, batches=max(1, events // 50_000))
    runs: dict[str, list[float]] = {"deltastreams": [], "plain_spark": []}
    for rep in range(reps):
        order = ("deltastreams", "plain_spark") if rep % 2 == 0 else ("plain_spark", "deltastreams")
        for system in order:
            root = run_root(base, f"{system}-{events}", input_root)
            seconds = _timed(commands(root, events)[system], base / f"{system}-{events}-{rep}.log")
            runs[system].append(seconds)
            print(f"  {events:,} events, {system}: {seconds:.1f} s ({events / seconds:,.0f} events/s)", flush=True)
    best = {system: min(times) for system, times in runs.items()}
    return {
        "events": events,
        "seconds": runs,
        "events_per_s": {system: events / seconds for system, seconds in best.items()},
        "ratio": best["plain_spark"] / best["deltastreams"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, nargs="+", default=[5_000_000, 16_000_000])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    base = Path(args.work_dir or tempfile.mkdtemp(prefix="deltastreams-bench-process-"))
    results = [compare(base, n, args.reps) for n in args.events]
    for r in results:
        print(f"{r['events']:,} events: deltastreams {r['events_per_s']['deltastreams']:,.0f}/s, plain Spark {r['events_per_s']['plain_spark']:,.0f}/s, ratio {r['ratio']:.2f}x")
    print(json.dumps(results))
    if not args.work_dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
