"""Local disk against an S3-compatible object store: the pageview job over the same events, once
with its root in a local directory and once on ``s3://`` (SeaweedFS on loopback,
:mod:`deltastreams.devtools.servers.s3_server`), each started from the command line; runs alternate, in one process, so
both see the same machine load.

    python -m deltastreams.devtools.bench.s3 [--events 200000] [--batches 8] [--small-events 20000] [--small-batches 40] [--reps 2]

Two workloads: *throughput* (``--events`` in ``--batches`` micro-batches) and *small batches*
(``--small-events`` in ``--small-batches``: there the per-commit round trips dominate). Per run it
prints the whole process's seconds (launch to exit), the processing span (first batch start to
last batch end, from ``--metrics-file``: start-up excluded), events/s over that span, and the
mean commit time per micro-batch; then the ratios S3 / local. Generating the input is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from deltastreams.devtools.bench.process import _timed
from deltastreams.jobs.pageview import generate
from deltastreams.devtools.servers.s3_server import S3Server

INTERVAL_MS = 200


def run(root: str, events: int, batches: int, work: Path, name: str) -> dict:
    generate(root, events, seed=1, batches=batches)
    metrics = work / f"{name}.metrics.jsonl"
    per_batch = -(-events // batches)
    command = [
        sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", root, "--until-caught-up",
        "--commit-interval-ms", str(INTERVAL_MS), "--max-records-per-batch", str(per_batch),
        "--metrics-file", str(metrics), "--set", f"state_dir={work / name / 'state'}",
    ]  # fmt: skip
    seconds = _timed(command, work / f"{name}.log")
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    span = max(m["time"] for m in lines) - min(m["time"] - m["total_ms"] / 1000 for m in lines)
    return {
        "process_s": seconds,
        "span_s": span,
        "events_per_s": events / span,
        "batches": len(lines),
        "commit_ms": statistics.mean(m["commit_ms"] for m in lines),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--small-events", type=int, default=20_000)
    parser.add_argument("--small-batches", type=int, default=40)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="deltastreams-bench-s3-"))
    workloads = {"throughput": (args.events, args.batches), "small batches": (args.small_events, args.small_batches)}
    runs: dict[tuple[str, str], list[dict]] = {}
    with S3Server.start() as server:
        os.environ.update(server.storage_options)  # this process's generate() and every job reach the store so
        for rep in range(args.reps):
            for workload, (events, batches) in workloads.items():
                for storage in ("local", "s3") if rep % 2 == 0 else ("s3", "local"):
                    name = f"{workload.replace(' ', '-')}-{storage}-{rep}"
                    root = server.uri(name) if storage == "s3" else str(work / name / "root")
                    result = run(root, events, batches, work, name)
                    runs.setdefault((workload, storage), []).append(result)
                    print(
                        f"  {workload}, {storage}: process {result['process_s']:.1f} s, processing {result['span_s']:.1f} s "
                        f"({result['events_per_s']:,.0f} events/s), {result['batches']} batches, commit {result['commit_ms']:.0f} ms/batch",
                        flush=True,
                    )
    summary = {}
    for workload, (events, batches) in workloads.items():
        best = {storage: min(runs[(workload, storage)], key=lambda r: r["span_s"]) for storage in ("local", "s3")}
        summary[workload] = {
            "events": events,
            "micro_batches_per_source": batches,
            "local": best["local"],
            "s3": best["s3"],
            "throughput_ratio_s3_to_local": best["s3"]["events_per_s"] / best["local"]["events_per_s"],
            "commit_ms_ratio_s3_to_local": best["s3"]["commit_ms"] / best["local"]["commit_ms"],
        }
        print(
            f"{workload}: {events:,} events in {batches} appends: local {best['local']['events_per_s']:,.0f} events/s, "
            f"S3 {best['s3']['events_per_s']:,.0f} events/s, ratio {summary[workload]['throughput_ratio_s3_to_local']:.2f}x; "
            f"commit {best['local']['commit_ms']:.0f} ms vs {best['s3']['commit_ms']:.0f} ms per batch "
            f"({summary[workload]['commit_ms_ratio_s3_to_local']:.1f}x)"
        )
    print(json.dumps(summary))
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"bench_s3 took {time.perf_counter() - started:.0f} s", file=sys.stderr)
    sys.exit(code)
