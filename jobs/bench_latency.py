"""End-to-end latency of the pageview job on a steady stream.

:class:`jobs.steady.SteadyGenerator` appends ``rate`` events per second, in appends every
100 ms, with event time = the wall-clock time of the append (no late records). The job runs
meanwhile. An output revision carries the largest event time of its window so far, i.e. the
append time of the newest input record that produced it, so its latency is the commit time of the
output's Delta version minus that timestamp.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from conf import StreamsConfig
from jobs.pageview import INPUT_TOPIC, OUTPUT_TOPIC, build_topology
from jobs.pageview_data import VALUE_TYPE
from jobs.steady import SteadyGenerator
from sinks import Topic, create_topic, files_added
from streams.app import StreamsApp


def output_latencies(root: str) -> np.ndarray:
    """Latency (ms) of every committed output record: its version's commit time minus its
    timestamp."""
    output = Topic.open(root, OUTPUT_TOPIC)
    commit_time = {h["version"]: h["timestamp"] for h in output.delta_table().history()}
    latencies = []
    for version in sorted(commit_time):
        if version == 0:
            continue
        files = files_added(output.uri, version - 1, version)
        if files:
            stamps = output.read_files(files).column("timestamp").to_numpy()
            latencies.append(commit_time[version] - stamps)
    return np.concatenate(latencies) if latencies else np.zeros(0)


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
    app.run(until_caught_up=True, timeout_s=600)
    latencies = output_latencies(root)
    if latencies.size == 0:
        return {"p50": None, "p95": None, "p99": None, "records": 0, "events": appended.events}
    p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "records": int(latencies.size), "events": appended.events}
