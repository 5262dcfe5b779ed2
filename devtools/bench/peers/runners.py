"""How each peer runs: its command line (a process of its own, started as its user would start it),
where its results land, how long its steady part took (from what the peer itself records), where
its time went, and how a run on a live stream is told to stop.

Peers, by key:
- ``deltastreams-delta``: ``python -m deltastreams.jobs.pageview run`` over the Delta topic;
- ``deltastreams-kafka``: the same with ``--kafka`` (the input from the Kafka topic);
- ``kafka-streams``: ``deltastreams.peers.PageviewStreams`` (Kafka Streams 4.3.1, Kafka -> Kafka);
- ``spark-kafka``: ``python -m deltastreams.devtools.bench.peers.spark_pageview --source kafka`` (Spark's Kafka connector,
  delta-spark writes);
- ``spark-delta``: the same with ``--source delta`` (delta-spark's streaming source).

All run exactly once (deltastreams' ``exactly_once``, Kafka's ``exactly_once_v2``, Spark's
checkpointed offsets with idempotent Delta writes), commit at the run's interval, and bound a
catch-up micro-batch to the same number of records (Kafka Streams has no micro-batches).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd

from deltastreams.devtools.servers.jvm import classpath, java
from deltastreams.jobs.pageview import INPUT_TOPIC, input_topic, read_results
from deltastreams.devtools.bench.peers.inputs import EVENTS_PER_APPEND, Inputs

PARTITIONS = 3  # of deltastreams' repartition and output topics; Spark's shuffle partitions; Kafka Streams' repartition topic
WINDOW_MS, GRACE_MS, MIN_DURATION_S = 5000, 10_000, 30
KAFKA_STREAMS_HEAP = "2g"  # as deltastreams' Spark driver (spark.driver.memory)


@dataclass(frozen=True)
class Peer:
    key: str
    name: str
    source: str
    """``delta`` or ``kafka``: where it reads the input."""
    sink: str


PEERS = {
    p.key: p
    for p in (
        Peer("deltastreams-delta", "deltastreams", "delta", "delta"),
        Peer("deltastreams-kafka", "deltastreams", "kafka", "delta"),
        Peer("kafka-streams", "Kafka Streams 4.3.1", "kafka", "kafka"),
        Peer("spark-kafka", "Spark SS 4.2.0 + delta-spark 4.4.0", "kafka", "delta"),
        Peer("spark-delta", "Spark SS 4.2.0 + delta-spark 4.4.0", "delta", "delta"),
    )
}


def label(key: str) -> str:
    peer = PEERS[key]
    return f"{peer.name}, {peer.source.capitalize()} -> {peer.sink.capitalize()}"


def batch_records(interval_ms: int, events: int) -> int:
    """A catch-up micro-batch's bound, as ``deltastreams.devtools.bench.suite`` sets it: interval x 1M events/s, at least 50k."""
    return max(50_000, min(events, 1_000_000 * interval_ms // 1000))


@dataclass
class Run:
    """One run of one peer. ``inputs``: the prepared input (a catch-up run over all of it); None
    for a run on a live stream, whose input the run's own directory or Kafka topic receives."""

    peer: str
    events: int
    interval_ms: int
    directory: Path
    bootstrap_servers: str | None = None
    inputs: Inputs | None = None
    name: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    @property
    def catch_up(self) -> bool:
        return self.inputs is not None

    @property
    def batch_bound(self) -> int:
        return batch_records(self.interval_ms, self.events) if self.catch_up else 1_000_000

    # where things are
    @property
    def root(self) -> Path:
        return self.directory / "root"

    @property
    def metrics_file(self) -> Path:
        return self.directory / "metrics.jsonl"

    @property
    def timings_file(self) -> Path:
        return self.directory / "timings.json"

    @property
    def output_table(self) -> Path:
        return self.directory / "output"

    @property
    def input_table(self) -> Path:
        """The plain Delta table spark-delta reads."""
        return self.inputs.spark_table if self.inputs else self.directory / "input"

    @property
    def application_id(self) -> str:
        return f"ks-{self.name}"

    @property
    def output_topic(self) -> str:
        return f"counts-{self.name}"

    @property
    def repartition_topic(self) -> str:
        return f"{self.application_id}-by-category-repartition"

    @property
    def events_file(self) -> Path:
        """On a live stream: where the stream's total goes once it ended (peers that stop by
        themselves wait for it)."""
        return self.directory / "events.txt"

    @property
    def log(self) -> Path:
        return self.directory / "run.log"


def prepare(run: Run) -> None:
    """Whatever must exist before the peer starts: its input topic under its root (deltastreams
    over Delta), its output topic (Kafka Streams: the broker creates no topics by itself)."""
    run.directory.mkdir(parents=True, exist_ok=True)
    if run.peer == "deltastreams-delta":
        (run.root / "topics").mkdir(parents=True, exist_ok=True)
        if run.catch_up:
            (run.root / "topics" / INPUT_TOPIC).symlink_to((run.inputs.deltastreams_root / "topics" / INPUT_TOPIC).resolve())
        else:
            input_topic(str(run.root))
    elif run.peer == "kafka-streams":
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": run.bootstrap_servers})
        admin.create_topics([NewTopic(run.output_topic, PARTITIONS, 1)])[run.output_topic].result(timeout=30)


def command(run: Run) -> list[str]:
    interval = str(run.interval_ms)
    if run.peer.startswith("deltastreams"):
        line = [sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", str(run.root), "--commit-interval-ms", interval,
                "--max-records-per-batch", str(run.batch_bound), "--partitions", str(PARTITIONS), "--metrics-file", str(run.metrics_file),
                "--log-file", str(run.directory / "deltastreams.log")]
        if run.catch_up:
            line.append("--until-caught-up")
        if run.peer == "deltastreams-kafka":
            line += ["--kafka", run.bootstrap_servers]
        return line
    if run.peer == "kafka-streams":
        return [
            java(), f"-Xmx{KAFKA_STREAMS_HEAP}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            # One WARN line per dropped late record: deltastreams and Spark count them instead.
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.kstream.internals.KStreamWindowAggregate=error",
            "-cp", classpath(), "deltastreams.peers.PageviewStreams",
            "--bootstrap-servers", run.bootstrap_servers, "--input", INPUT_TOPIC, "--output", run.output_topic,
            "--application-id", run.application_id, "--commit-interval-ms", interval, "--threads", "2",
            "--partitions", str(PARTITIONS), "--state-dir", str(run.directory / "state"), "--keep-repartition",
            *(["--expect-input", str(run.events)] if run.catch_up else ["--expect-input-file", str(run.events_file)]),
        ]
    source = "kafka" if run.peer == "spark-kafka" else "delta"
    line = [sys.executable, "-m", "deltastreams.devtools.bench.peers.spark_pageview", "--source", source, "--output", str(run.output_table),
            "--checkpoint", str(run.directory / "checkpoint"), *(["--events", str(run.events)] if run.catch_up else ["--events-file", str(run.events_file)]),
            "--commit-interval-ms", interval,
            "--partitions", str(PARTITIONS), "--timings", str(run.timings_file)]
    if source == "kafka":
        return line + ["--bootstrap-servers", run.bootstrap_servers, "--max-offsets-per-trigger", str(run.batch_bound)]
    files = max(1, run.batch_bound // EVENTS_PER_APPEND) if run.catch_up else 1000  # live: Delta's default
    return line + ["--input", str(run.input_table), "--max-files-per-trigger", str(files)]


# -- running --------------------------------------------------------------------------------------


@dataclass
class Timing:
    whole_s: float
    """Launch to exit."""
    steady_s: float
    """First input record's processing started to last result committed."""
    profile: dict


def run_to_completion(run: Run, timeout_s: float = 3600) -> Timing:
    """A catch-up run: launched, waited for (every peer exits by itself once all input is
    processed), timed."""
    prepare(run)
    with open(run.log, "w") as log:
        started = time.perf_counter()
        launched_at = time.time()
        done = subprocess.run(command(run), stdout=subprocess.PIPE, stderr=log, text=True, timeout=timeout_s)
        whole = time.perf_counter() - started
    (run.directory / "stdout.txt").write_text(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"{run.peer} exited with {done.returncode}: see {run.log}")
    steady, profile = steady_part(run, done.stdout, launched_at)
    return Timing(whole, steady, profile)


def steady_part(run: Run, stdout: str, launched_at: float) -> tuple[float, dict]:
    """Seconds of the steady part, and where the run's time went, from the peer's own records."""
    if run.peer.startswith("deltastreams"):
        return _deltastreams_profile(run, launched_at)
    if run.peer == "kafka-streams":
        t = json.loads(stdout.strip().splitlines()[-1])
        ms = lambda a, b: (t[b] - t[a]) / 1000  # noqa: E731
        # Kafka Streams processes the tasks that are ready while others still start: RUNNING
        # (every task ready) may come after the first record.
        profile = {"launch_to_jvm_s": t["jvm_start_ms"] / 1000 - launched_at, "jvm_to_first_record_s": ms("jvm_start_ms", "first_record_ms"),
                   "jvm_to_running_s": ms("jvm_start_ms", "running_ms"), "processing_s": ms("first_record_ms", "done_ms"),
                   "close_s": ms("done_ms", "closed_ms")}
        return profile["processing_s"], profile
    return _spark_profile(run, launched_at)


def metrics(run: Run) -> list[dict]:
    if not run.metrics_file.exists():
        return []
    return [json.loads(line) for line in run.metrics_file.read_text().splitlines() if line.endswith("}")]


def _deltastreams_profile(run: Run, launched_at: float) -> tuple[float, dict]:
    batches = [m for m in metrics(run) if m["records_in"]]
    first = min(m["time"] - m["total_ms"] / 1000 for m in batches)
    last = max(m["time"] for m in batches)
    # The first trigger's job also starts the Python workers that host the tasks (imports, stores).
    opening = min((m for m in batches if m["subtopology"] == 0), key=lambda m: m["batch_id"])
    profile = {"start_to_first_batch_s": first - launched_at, "batches": len({m["batch_id"] for m in batches}),
               "first_trigger_job_s": round(opening["process_ms"] / 1000, 3)}
    for sub in sorted({m["subtopology"] for m in batches}):
        mine = [m for m in batches if m["subtopology"] == sub]
        profile[f"subtopology_{sub}"] = {
            "records_in": sum(m["records_in"] for m in mine),
            "commit_s": round(sum(m["commit_ms"] for m in mine) / 1000, 3),
            "driver_s": {k: round(sum(m["phases"].get(k, 0) for m in mine) / 1000, 3) for k in mine[0]["phases"]},
            "tasks_s": {k: round(sum(m["task_phases"].get(k, 0) for m in mine) / 1000, 3) for k in mine[0]["task_phases"]},
        }
    # Both sub-topologies run in each trigger's one Spark job: the job's time counts once.
    profile["trigger_jobs_s"] = round(sum(m["process_ms"] for m in batches if m["subtopology"] == 0) / 1000, 3)
    return last - first, profile


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _spark_profile(run: Run, launched_at: float) -> tuple[float, dict]:
    t = json.loads(run.timings_file.read_text())
    data = [b for b in t["batches"] if b["rows"]]
    first = min(_epoch(b["timestamp"]) for b in data)
    last = max(_epoch(b["timestamp"]) + b["duration_ms"]["triggerExecution"] / 1000 for b in data)
    keys = sorted({k for b in t["batches"] for k in b["duration_ms"]})
    profile = {
        "session_start_s": t["session_ready"] - launched_at,
        "query_start_to_first_batch_s": first - t["query_start"],
        "batches": len(t["batches"]),
        "data_batches": len(data),
        "duration_s": {k: round(sum(b["duration_ms"].get(k, 0) for b in t["batches"]) / 1000, 3) for k in keys},
        "first_batch_s": round(min(data, key=lambda b: b["batch_id"])["duration_ms"]["triggerExecution"] / 1000, 3),
        "stop_s": t["stopped"] - t["done"],
    }
    return last - first, profile


# -- a run on a live stream -----------------------------------------------------------------------


def start(run: Run) -> subprocess.Popen:
    prepare(run)
    log = open(run.log, "w")  # noqa: SIM115 - the child writes to it until it exits
    return subprocess.Popen(command(run), stdout=subprocess.PIPE, stderr=log, text=True)


def finish(run: Run, process: subprocess.Popen, timeout_s: float) -> None:
    """Once the live stream ended with ``run.events`` events: wait until the peer processed every
    one and committed the results, and see it exit. Kafka Streams and Spark exit by themselves at
    that point, told the total through ``run.events_file``; deltastreams runs until stopped, so it
    gets SIGTERM (to its driver process, as ``deltastreams.jobs.pageview`` documents) once its metrics show
    every input record read and every repartition record counted."""
    partial = run.events_file.with_suffix(".partial")
    partial.write_text(str(run.events))
    partial.replace(run.events_file)
    deadline = time.monotonic() + timeout_s
    if run.peer.startswith("deltastreams"):
        while time.monotonic() < deadline and process.poll() is None:
            batches = metrics(run)
            read = sum(m["records_in"] for m in batches if m["subtopology"] == 0)
            forwarded = sum(m["records_out"] for m in batches if m["subtopology"] == 0)
            counted = sum(m["records_in"] for m in batches if m["subtopology"] == 1)
            if read >= run.events and counted >= forwarded:
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
    try:
        stdout, _ = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise RuntimeError(f"{run.peer} did not finish the live stream within {timeout_s:.0f} s: see {run.log}") from None
    (run.directory / "stdout.txt").write_text(stdout or "")
    if process.returncode != 0:
        raise RuntimeError(f"{run.peer} exited with {process.returncode}: see {run.log}")


# -- results ---------------------------------------------------------------------------------------

RESULT_COLUMNS = ["category", "window_start", "window_end", "count"]


def latest_counts(run: Run) -> pd.DataFrame:
    """The peer's final counts: the latest revision of every window it emitted."""
    if run.peer.startswith("deltastreams"):
        return read_results(str(run.root)).to_pandas()[RESULT_COLUMNS]
    if run.peer == "kafka-streams":
        from deltastreams.devtools.bench.peers.kafka_topics import kafka_streams_output

        return kafka_streams_output(run.bootstrap_servers, run.output_topic, WINDOW_MS)
    from deltalake import DeltaTable

    rows = DeltaTable(str(run.output_table)).to_pyarrow_dataset().to_table(use_threads=False).to_pandas()
    latest = rows.sort_values("batch_id").drop_duplicates(["category", "window_start"], keep="last")
    return latest[RESULT_COLUMNS].sort_values(["window_start", "category"]).reset_index(drop=True)


def cleanup(run: Run) -> None:
    """Drop what a finished run keeps on the broker (Kafka Streams' internal topics and output):
    the input stays for the next run."""
    if run.peer != "kafka-streams":
        return
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": run.bootstrap_servers})
    mine = [t for t in admin.list_topics(timeout=30).topics if t.startswith(run.application_id) or t == run.output_topic]
    for future in admin.delete_topics(mine).values():
        future.result(timeout=60)

