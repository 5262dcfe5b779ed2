"""End-to-end latency of each peer on a steady stream, as ``deltastreams.devtools.bench.latency`` measures
deltastreams': a generator appends ``rate`` events a second in appends every 100 ms, each event
stamped with the wall-clock time of its append (no late events), into the place the peer reads
(Delta topic, plain Delta table or Kafka topic); the peer runs meanwhile. A window's result
carries the newest event time among the records counted into it (the record timestamp Kafka
Streams and deltastreams give a windowed aggregate; Spark's ``max(ts)``), that is the append time
of the newest input it reflects. Latency = when that result became visible minus that time:
- Delta outputs: the commit time of the Delta version that added it (``commitInfo.timestamp``);
- Kafka output: when a read_committed consumer polling the output topic (``fetch.wait.max.ms``
  20) received it.

Only results of events appended from ``settle_s`` after the peer's first result on count, for
``seconds``: the peer's start and the catch-up of what arrived meanwhile are not latency. The
peer then processes every event of the stream, and its results are checked like a catch-up
run's.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from deltastreams.devtools.bench.peers import checks
from deltastreams.devtools.bench.peers.inputs import DeltaTableAppender, KafkaAppender, RecordingAppender
from deltastreams.devtools.bench.peers.runners import Run, finish, start
from deltastreams.jobs.pageview import INPUT_TOPIC, OUTPUT_TOPIC, input_topic
from deltastreams.jobs.steady import SteadyGenerator

TICK_S = 0.1


def measure(run: Run, *, rate: int, settle_s: float, seconds: float, ready_timeout_s: float = 300) -> dict:
    """Runs ``run.peer`` on a steady stream of ``rate`` events/s: the stream starts with the peer,
    its results are measured for ``seconds`` from ``settle_s`` after the peer's first result (its
    start-up and the catch-up of what arrived meanwhile are not latency), then the stream ends and
    the peer finishes it. The latency percentiles, and the check of the peer's results."""
    appender = RecordingAppender(_appender(run))
    first_append = 1 if run.peer == "spark-delta" else 0  # the plain table's version 0 is its empty creation
    generator = SteadyGenerator(appender, rate)
    progress: list = []
    feeding = threading.Thread(target=lambda: progress.append(generator.run()), name="steady-generator", daemon=True)
    watcher = None
    process = start(run)
    try:
        if run.peer == "kafka-streams":
            watcher = OutputWatcher(run.bootstrap_servers, run.output_topic)
            watcher.start()
        stream_started = time.time()
        feeding.start()
        ready = _first_result(run, watcher, process, ready_timeout_s)
        measured_from = ready + settle_s
        time.sleep(max(0.0, measured_from + seconds - time.time()))
        measured_to = time.time()
        generator.stop()
        feeding.join()
        run.events = progress[0].events
        finish(run, process, timeout_s=600)
    finally:
        generator.stop()
        if process.poll() is None:
            process.kill()
            process.wait()
        if watcher is not None:
            watcher.stop()
    if run.peer == "kafka-streams":
        newest, latency = watcher.newest_and_latency()
    else:
        newest, latency = delta_latencies(_output_table(run), "newest" if run.peer.startswith("spark") else "timestamp")
    measured = latency[(newest >= measured_from * 1000) & (newest < measured_to * 1000)]
    verdict = checks.check(run, appender.frame(first_append))
    result = {
        "rate": rate, "settle_s": settle_s, "seconds": seconds, "first_result_after_s": ready - stream_started, "events": progress[0].events,
        "appends": progress[0].appends, "generator_behind_events": progress[0].behind_events, "records": int(measured.size), "check": verdict.to_json(),
    }
    if measured.size:
        p50, p95, p99 = np.percentile(measured, [50, 95, 99])
        result.update({"p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99), "max_ms": float(measured.max())})
    return result


def _first_result(run: Run, watcher: OutputWatcher | None, process, timeout_s: float) -> float:
    """When the peer's first result became visible (polled every 100 ms)."""
    deadline = time.monotonic() + timeout_s
    table = None if watcher is not None else _output_table(run)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{run.peer} exited ({process.returncode}) before its first result: see {run.log}")
        if (watcher.arrivals if watcher is not None else _has_data(table)):
            return time.time()
        time.sleep(0.1)
    raise RuntimeError(f"{run.peer} showed no result within {timeout_s:.0f} s of the stream's start: see {run.log}")


def _has_data(table: Path) -> bool:
    return any('"add"' in log.read_text() for log in sorted((table / "_delta_log").glob("*.json")))


def _appender(run: Run):
    if run.peer == "deltastreams-delta":
        run.directory.mkdir(parents=True, exist_ok=True)
        from deltastreams.jobs.steady import TopicAppender

        return TopicAppender(input_topic(str(run.root)))
    if run.peer == "spark-delta":
        run.directory.mkdir(parents=True, exist_ok=True)
        return DeltaTableAppender(run.input_table)
    return KafkaAppender(run.bootstrap_servers, INPUT_TOPIC)


def _output_table(run: Run) -> Path:
    return run.root / "topics" / OUTPUT_TOPIC if run.peer.startswith("deltastreams") else run.output_table


def delta_latencies(table: Path, column: str) -> tuple[np.ndarray, np.ndarray]:
    """For every row a Delta table's versions added as new data: its ``column`` (epoch ms) and its
    version's commit time minus it. Rewrites (``dataChange: false``: compaction) are not new data."""
    newest, latency = [], []
    for log in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        committed = next((a["commitInfo"]["timestamp"] for a in actions if "commitInfo" in a), None)
        added = [a["add"]["path"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
        if committed is None or not added:
            continue
        for path in added:
            stamps = pq.read_table(table / _unquote(path), columns=[column]).column(column).to_numpy()
            newest.append(stamps)
            latency.append(committed - stamps)
    if not newest:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(newest), np.concatenate(latency)


def _unquote(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)


class OutputWatcher(threading.Thread):
    """A read_committed consumer of every partition of a Kafka topic, noting when each record arrives."""

    def __init__(self, bootstrap_servers: str, topic: str) -> None:
        super().__init__(name="output-watcher", daemon=True)
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "peers-latency", "enable.auto.commit": False,
                                  "isolation.level": "read_committed", "fetch.wait.max.ms": 20, "auto.offset.reset": "earliest"})
        deadline = time.monotonic() + 30
        while not (partitions := self.consumer.list_topics(topic, timeout=30).topics[topic].partitions):
            if time.monotonic() > deadline:  # a topic just created may show no partitions for a moment
                raise RuntimeError(f"Kafka topic {topic} shows no partitions")
            time.sleep(0.1)
        self.consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        self.arrivals: list[tuple[float, int]] = []
        self.running = True

    def run(self) -> None:
        while self.running:
            messages = self.consumer.consume(num_messages=10_000, timeout=0.05)
            now = time.time() * 1000
            self.arrivals += [(now, m.timestamp()[1]) for m in messages if m.error() is None]

    def stop(self) -> None:
        time.sleep(1.0)  # the last commits' records are on their way
        self.running = False
        self.join(10)
        self.consumer.close()

    def newest_and_latency(self) -> tuple[np.ndarray, np.ndarray]:
        arrivals = np.array(self.arrivals, dtype=np.float64).reshape(-1, 2)
        return arrivals[:, 1], arrivals[:, 0] - arrivals[:, 1]
