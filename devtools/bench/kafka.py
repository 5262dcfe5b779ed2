"""Kafka -> Delta against Delta -> Delta: the pageview job over the same events, read once from a
Kafka topic (``run --kafka``) and once from a Delta topic, each started from the command line and
timed from launch to exit; runs alternate, in one process so both see the same machine load.

    python -m deltastreams.devtools.bench.kafka --events 200000 [--reps 2]

The broker is the Apache Kafka broker the tests use (:mod:`deltastreams.devtools.servers.kafka_broker`: 4.3.1, KRaft, one
node), on loopback. Producing the events is timed apart (printed first), not in the runs. Prints
seconds and events/s per run and the ratio Kafka / Delta.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from deltastreams.devtools.bench.process import _timed
from deltastreams.devtools.servers.kafka_broker import KafkaBroker
from deltastreams.jobs.pageview import generate, generate_to_kafka

INTERVAL_MS, BATCH = 1000, 1_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    base = Path(args.work_dir or tempfile.mkdtemp(prefix="deltastreams-bench-kafka-"))
    base.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[float]] = {"kafka": [], "delta": []}
    with KafkaBroker.start() as broker:
        started = time.perf_counter()
        generate_to_kafka(broker.bootstrap_servers, args.events, seed=1)
        print(f"produced {args.events:,} events to Kafka in {time.perf_counter() - started:.1f} s", flush=True)
        for rep in range(args.reps):
            for system in (("kafka", "delta") if rep % 2 == 0 else ("delta", "kafka")):
                root = base / f"{system}-{rep}"
                shutil.rmtree(root, ignore_errors=True)
                common = ["--root", str(root), "--until-caught-up", "--commit-interval-ms", str(INTERVAL_MS), "--max-records-per-batch", str(BATCH)]
                if system == "delta":
                    generate(str(root), args.events, seed=1)
                else:
                    common += ["--kafka", broker.bootstrap_servers]
                seconds = _timed([sys.executable, "-m", "deltastreams.jobs.pageview", "run", *common], base / f"{system}-{rep}.log")
                runs[system].append(seconds)
                print(f"  {system}: {seconds:.1f} s ({args.events / seconds:,.0f} events/s)", flush=True)
    best = {system: min(times) for system, times in runs.items()}
    result = {
        "events": args.events,
        "seconds": runs,
        "events_per_s": {system: args.events / seconds for system, seconds in best.items()},
        "ratio_kafka_to_delta": best["delta"] / best["kafka"],
    }
    print(f"{args.events:,} events: Kafka -> Delta {result['events_per_s']['kafka']:,.0f}/s, Delta -> Delta "
          f"{result['events_per_s']['delta']:,.0f}/s, ratio {result['ratio_kafka_to_delta']:.2f}x")
    print(json.dumps(result))
    if not args.work_dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
