"""The Kafka sink against a real broker: the pageview job's counts, published to Kafka after each
decided batch, are exactly its Delta output, record for record and partition by partition, even
when the driver dies after deciding a batch and before its Kafka transaction (the restart finds
the batch missing in Kafka by the batch number committed with each transaction, and publishes it
once); a second instance fences the first's producer (tests/kafka/test_kafka_publisher.py)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

from jobs.pageview import OUTPUT_TOPIC
from sinks import Topic
from sinks.kafka import KafkaTopic, end_offsets, read_range


def cli(*args, crash_at=None):
    env = dict(os.environ)
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "jobs.pageview", *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.spark
def test_counts_reach_kafka_exactly_once_across_a_crash_before_the_kafka_transaction(fresh_broker, tmp_path):
    root, kafka = str(tmp_path), fresh_broker.bootstrap_servers
    assert cli("generate", "--root", root, "--events", "4000", "--batches", "4").returncode == 0
    run = ["run", "--root", root, "--output-kafka", kafka, "--until-caught-up", "--commit-interval-ms", "100", "--max-records-per-batch", "1000"]
    crashed = cli(*run, crash_at="before_kafka_publish@2")
    assert crashed.returncode == -9, crashed.stderr[-2000:]
    finished = cli(*run)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "published 1 decided batch(es) Kafka did not have yet" in finished.stderr

    delta = Topic.open(root, OUTPUT_TOPIC).read()
    topic = KafkaTopic(kafka, OUTPUT_TOPIC, key_format="bytes", value_format="bytes")
    ends = end_offsets(topic, range(Topic.open(root, OUTPUT_TOPIC).partitions))
    for partition, end in ends.items():
        records = read_range(topic, partition, 0, end)
        got = [(k[:-8].decode(), struct.unpack(">q", k[-8:])[0], json.loads(v), t)
               for k, v, t in zip(records["key"].to_pylist(), records["value"].to_pylist(), records["timestamp"].to_pylist(), strict=True)]
        rows = delta.filter(delta["partition"].to_numpy() == partition)
        want = list(zip(rows["key"].to_pylist(), rows["window_start"].to_pylist(), rows["value"].to_pylist(), rows["timestamp"].to_pylist(), strict=True))
        assert got == want and len(want) > 10, partition
