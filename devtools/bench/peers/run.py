"""Every peer of the pageview job in one benchmark: the same events through deltastreams (Delta ->
Delta and Kafka -> Delta), Kafka Streams 4.3.1 (Kafka -> Kafka) and plain Spark Structured
Streaming with delta-spark (Kafka -> Delta, Delta -> Delta), exactly once, at each commit
interval, alternating, best of ``--reps``; then end-to-end latency on a steady stream.

    python -m deltastreams.devtools.bench.peers                                  # 1M and 5M events, 100 ms and 1 s, 2 reps, latency
    python -m deltastreams.devtools.bench.peers --events 200000 --reps 1 --latency-seconds 10 --out /tmp/peers
    python -m deltastreams.devtools.bench.peers --peers kafka-streams,deltastreams-kafka --no-latency
    python -m deltastreams.devtools.bench.peers --report-only                    # rewrite peers.md / peers.png from peers.json

Each peer is a process of its own started as its user would (see :mod:`deltastreams.devtools.bench.peers.runners`),
timed from launch to exit (whole) and over its steady part (from the first input record's
processing to the last result committed, from the peer's own records). Every run's final counts
are checked against an independent computation of what that peer must output
(:mod:`deltastreams.devtools.bench.peers.checks`); a run that fails its check is reported as such, never as a figure.

Resumable: every finished run is saved at once in ``<out>/peers.json``, and a later invocation
skips the runs (peer, events, commit interval, repetition) and latency runs already there
(``--fresh`` starts over). Each run records the load average before and after it, each
invocation the machine and ``uptime``. The report is written to ``<out>/peers.md`` and
``<out>/peers.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

PEER_KEYS = ("deltastreams-delta", "deltastreams-kafka", "kafka-streams", "spark-kafka", "spark-delta")
BROKER_HEAP = "1g"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def machine() -> dict:
    import confluent_kafka
    import deltalake
    import pyarrow
    import pyspark

    from deltastreams.devtools.servers.jvm import java

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), platform.machine())
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    java_version = subprocess.run([java(), "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    return {
        "cpu": model, "cores": os.cpu_count(), "memory_gb": round(memory_kb / 2**20, 1), "os": platform.platform(),
        "python": platform.python_version(), "java": java_version, "pyspark": pyspark.__version__, "deltalake": deltalake.__version__,
        "pyarrow": pyarrow.__version__, "confluent_kafka": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0],
        "kafka": "4.3.1", "kafka_streams": "4.3.1", "delta_spark": "4.4.0", "spark_sql_kafka": "4.2.0",
    }


class Results:
    """``peers.json``: every run so far, saved after each."""

    def __init__(self, path: Path, fresh: bool) -> None:
        self.path = path
        self.data = {"runs": [], "latency": [], "sessions": [], "kafka_produce": []}
        if path.exists() and not fresh:
            self.data = json.loads(path.read_text())

    def has_run(self, peer: str, events: int, interval: int, rep: int) -> bool:
        return any(r["peer"] == peer and r["events"] == events and r["interval_ms"] == interval and r["rep"] == rep for r in self.data["runs"])

    def has_latency(self, peer: str) -> bool:
        return any(r["peer"] == peer for r in self.data["latency"])

    def add(self, kind: str, record: dict) -> None:
        self.data[kind].append(record)
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(self.data, indent=1))
        partial.replace(self.path)


def _keep_only_records(directory: Path) -> None:
    """A checked run's data goes (disk); its logs, metrics and timings stay."""
    for name in ("root", "output", "checkpoint", "state", "input"):
        shutil.rmtree(directory / name, ignore_errors=True)


def throughput(results: Results, session: str, base: Path, peers: list[str], events: int, intervals: list[int], reps: int) -> None:
    from deltastreams.devtools.servers.kafka_broker import KafkaBroker
    from deltastreams.devtools.bench.peers import checks, inputs
    from deltastreams.devtools.bench.peers.runners import Run, cleanup, label, run_to_completion

    configs = [(peer, interval) for peer in peers for interval in intervals]
    pending = [(rep, peer, interval) for rep in range(reps) for peer, interval in configs if not results.has_run(peer, events, interval, rep)]
    if not pending:
        return
    print(f"{events:,} events: preparing the input ...", flush=True)
    data = inputs.prepare(base, events)
    frame = inputs.source_frame(events)
    inputs.check_topic_holds(data, frame)
    kafka_semantics = checks.reference(frame)
    with ExitStack() as stack:
        bootstrap = None
        if any(peer in ("deltastreams-kafka", "kafka-streams", "spark-kafka") for _, peer, _ in pending):
            broker = stack.enter_context(KafkaBroker.start(heap=BROKER_HEAP))
            bootstrap = broker.bootstrap_servers
            started = time.perf_counter()
            inputs.produce_to_kafka(bootstrap, events)
            seconds = time.perf_counter() - started
            results.add("kafka_produce", {"events": events, "seconds": seconds, "session": session})
            print(f"  produced {events:,} events to Kafka in {seconds:.1f} s", flush=True)
        for rep in range(reps):
            order = configs if rep % 2 == 0 else configs[::-1]  # who goes first alternates
            for peer, interval in order:
                if results.has_run(peer, events, interval, rep):
                    continue
                run = Run(peer, events, interval, base / f"runs-{events}" / f"{peer}-{interval}-{rep}", bootstrap_servers=bootstrap, inputs=data)
                shutil.rmtree(run.directory, ignore_errors=True)
                load_before = os.getloadavg()
                timing = run_to_completion(run)
                load_after = os.getloadavg()
                verdict = checks.check(run, frame, kafka_semantics)
                cleanup(run)
                _keep_only_records(run.directory)
                results.add("runs", {
                    "peer": peer, "label": label(peer), "events": events, "interval_ms": interval, "rep": rep, "session": session, "finished": _now(),
                    "whole_s": timing.whole_s, "steady_s": timing.steady_s, "events_per_s": events / timing.whole_s,
                    "events_per_s_steady": events / timing.steady_s, "load_before": load_before, "load_after": load_after,
                    "batch_records": run.batch_bound, "check": verdict.to_json(), "profile": timing.profile, "directory": str(run.directory),
                })
                mark = "ok" if verdict.ok else f"WRONG: {verdict.problems}"
                print(f"  [{rep}] {peer}@{interval}ms: {timing.whole_s:.1f} s whole ({events / timing.whole_s:,.0f}/s), steady "
                      f"{events / timing.steady_s:,.0f}/s; load {load_before[0]:.2f}->{load_after[0]:.2f}; check {mark}", flush=True)


def latency(results: Results, session: str, base: Path, peers: list[str], rate: int, settle_s: float, seconds: float, interval: int) -> None:
    from deltastreams.devtools.servers.kafka_broker import KafkaBroker
    from deltastreams.devtools.bench.peers import latency as steady
    from deltastreams.devtools.bench.peers.runners import Run, cleanup, label

    for peer in peers:
        if results.has_latency(peer):
            continue
        with ExitStack() as stack:
            bootstrap = None
            if peer in ("deltastreams-kafka", "kafka-streams", "spark-kafka"):
                broker = stack.enter_context(KafkaBroker.start(heap=BROKER_HEAP))
                bootstrap = broker.bootstrap_servers
            run = Run(peer, 0, interval, base / "latency" / peer, bootstrap_servers=bootstrap)
            shutil.rmtree(run.directory, ignore_errors=True)
            load_before = os.getloadavg()
            stats = steady.measure(run, rate=rate, settle_s=settle_s, seconds=seconds)
            load_after = os.getloadavg()
            cleanup(run)
            _keep_only_records(run.directory)
        results.add("latency", {"peer": peer, "label": label(peer), "interval_ms": interval, "session": session, "finished": _now(),
                                "load_before": load_before, "load_after": load_after, **stats})
        mark = "ok" if stats["check"]["ok"] else f"WRONG: {stats['check']['problems']}"
        print(f"  latency {peer}@{interval}ms: p50 {stats.get('p50_ms', float('nan')):.0f} ms, p99 {stats.get('p99_ms', float('nan')):.0f} ms "
              f"over {stats['records']:,} results; load {load_before[0]:.2f}->{load_after[0]:.2f}; check {mark}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.peers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default=",".join(PEER_KEYS), help=f"comma-separated, of {', '.join(PEER_KEYS)}")
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--intervals", type=int, nargs="+", default=[100, 1000], help="commit intervals (ms)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--latency-only", action="store_true")
    parser.add_argument("--latency-rate", type=int, default=20_000, help="events/s of the steady stream")
    parser.add_argument("--latency-settle-s", type=float, default=10.0, help="from a peer's first result to the start of the measurement")
    parser.add_argument("--latency-seconds", type=float, default=30.0, help="measured part of the steady stream")
    parser.add_argument("--latency-interval", type=int, default=100)
    parser.add_argument("--out", default="docs/bench", help="where peers.json, peers.md and peers.png go")
    parser.add_argument("--work-dir", default=None, help="where data goes (default: a temporary directory, removed at the end)")
    parser.add_argument("--fresh", action="store_true", help="forget the runs in <out>/peers.json")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(peers) - set(PEER_KEYS))
    if unknown:
        parser.error(f"unknown peers {unknown}; the peers are {', '.join(PEER_KEYS)}")
    out = Path(args.out)
    results = Results(out / "peers.json", args.fresh)
    if not args.report_only:
        session = uuid.uuid4().hex[:8]
        record = {"id": session, "started": _now(), "command": "python -m deltastreams.devtools.bench.peers " + " ".join(sys.argv[1:] if argv is None else argv),
                  "uptime_start": uptime(), "machine": machine()}
        results.data["sessions"].append(record)
        results.save()
        print(f"session {session}; {record['uptime_start']}", flush=True)
        base = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="deltastreams-peers-"))
        base.mkdir(parents=True, exist_ok=True)
        try:
            if not args.latency_only:
                for events in args.events:
                    throughput(results, session, base, peers, events, args.intervals, args.reps)
            if not args.no_latency:
                latency(results, session, base, peers, args.latency_rate, args.latency_settle_s, args.latency_seconds, args.latency_interval)
        finally:
            record["uptime_end"] = uptime()
            record["ended"] = _now()
            results.save()
            print(f"session {session} ended; {record['uptime_end']}", flush=True)
            if not args.work_dir:
                shutil.rmtree(base, ignore_errors=True)
    from deltastreams.devtools.bench.peers.report import write_report

    write_report(results.data, out)
    print(f"report: {out / 'peers.md'}", file=sys.stderr)
    wrong = [r for r in results.data["runs"] + results.data["latency"] if not r["check"]["ok"]]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
