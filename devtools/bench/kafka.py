"""Kafka -> Delta against Delta -> Delta: the pageview job over the same events, read once from a
Kafka topic (``run --kafka``) and once from a Delta topic, each started from the command line and
timed from launch to exit; runs alternate, in one process so both see the same machine load.

    python -m deltastreams.devtools.bench.kafka --events 200000 [--reps 2]

Both read the events in batches of at most 1M records (``--max-records-per-batch``; the Delta
topic is written in appends of that many, as a Delta batch takes whole versions). The broker is the Apache Kafka broker the tests use (:mod:`deltastreams.devtools.servers.kafka_broker`: 4.3.1, KRaft, one
node), on loopback. Producing the events is timed apart (printed first), not in the runs. Prints
seconds and events/s per run and the ratio Kafka / Delta; and per run the CPU seconds the machine
spent (every process, from ``/proc/stat``: the job's processes and, in a Kafka run, the broker
serving it) and the broker's share, so a difference can be put on the job or on the broker.
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
from deltastreams.devtools.servers.process_tree import busy_cpu_s, process
from deltastreams.jobs.pageview import generate, generate_to_kafka, kafka_input_topic
from deltastreams.sinks.kafka import close_readers, read_range, watermarks

INTERVAL_MS, BATCH = 1000, 1_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--max-records-per-batch", type=int, default=BATCH, help="both runs' batch cap (default %(default)s)")
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    base = Path(args.work_dir or tempfile.mkdtemp(prefix="deltastreams-bench-kafka-"))
    base.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[float]] = {"kafka": [], "delta": []}
    cpu: dict[str, list[dict]] = {"kafka": [], "delta": []}
    with KafkaBroker.start() as broker:
        started = time.perf_counter()
        generate_to_kafka(broker.bootstrap_servers, args.events, seed=1)
        print(f"produced {args.events:,} events to Kafka in {time.perf_counter() - started:.1f} s", flush=True)
        # A broker serves its first fetches while its JVM compiles that path: the first run after
        # starting it took 1.5x the next (2.5 s against 1.7 at 1M). A broker in use has served
        # fetches before: one untimed read of the topic first.
        topic = kafka_input_topic(broker.bootstrap_servers)
        for partition, (low, high) in watermarks(topic, [0, 1]).items():
            read_range(topic, partition, low, high)
        close_readers()
        for rep in range(args.reps):
            for system in (("kafka", "delta") if rep % 2 == 0 else ("delta", "kafka")):
                root = base / f"{system}-{rep}"
                shutil.rmtree(root, ignore_errors=True)
                common = ["--root", str(root), "--until-caught-up", "--commit-interval-ms", str(INTERVAL_MS), "--max-records-per-batch", str(args.max_records_per_batch)]
                if system == "delta":
                    # In appends of at most a batch: a Delta batch takes whole versions, so one
                    # version of 5M events was one batch where Kafka's ran five.
                    generate(str(root), args.events, seed=1, batches=-(-args.events // args.max_records_per_batch))
                else:
                    common += ["--kafka", broker.bootstrap_servers]
                machine, serving = busy_cpu_s(), process(broker.process.pid).cpu_s
                seconds = _timed([sys.executable, "-m", "deltastreams.jobs.pageview", "run", *common], base / f"{system}-{rep}.log")
                machine, serving = busy_cpu_s() - machine, process(broker.process.pid).cpu_s - serving
                runs[system].append(seconds)
                cpu[system].append({"machine": round(machine, 2), "broker": round(serving, 2)})
                print(f"  {system}: {seconds:.1f} s ({args.events / seconds:,.0f} events/s), CPU {machine:.1f} s, of which the broker {serving:.1f} s", flush=True)
    best = {system: min(times) for system, times in runs.items()}
    result = {
        "events": args.events,
        "seconds": runs,
        "cpu_s": cpu,
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
