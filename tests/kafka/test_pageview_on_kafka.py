"""The pageview example on Kafka: ``generate --kafka`` produces exactly the events ``generate
--root`` appends for the same arguments (keys, values, timestamps, partitions, offsets), and
``run --kafka`` counts them from Kafka into Delta outputs."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from deltastreams.jobs import pageview
from deltastreams.jobs.pageview_data import generate_events
from deltastreams.sinks import Topic
from deltastreams.sinks.kafka import end_offsets, read_range


def cli(*args):
    return subprocess.run([sys.executable, "-m", "deltastreams.jobs.pageview", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture
def pageview_broker(broker):
    """The session's broker without the pageview job's topics, whose names are fixed."""
    for topic in (pageview.INPUT_TOPIC, pageview.OUTPUT_TOPIC):
        broker.delete_topic(topic)
    return broker


def test_generate_to_kafka_produces_the_events_generate_appends(pageview_broker, tmp_path):
    broker = pageview_broker
    args = ["--events", "3000", "--seed", "7", "--source-partitions", "3"]
    assert pageview.main(["generate", "--root", str(tmp_path), *args]) == 0
    assert pageview.main(["generate", "--kafka", broker.bootstrap_servers, *args]) == 0
    delta = Topic.open(str(tmp_path), pageview.INPUT_TOPIC).read()
    topic = pageview.kafka_input_topic(broker.bootstrap_servers)
    ends = end_offsets(topic, range(3))
    assert sum(ends.values()) == 3000
    for partition, end in ends.items():
        kafka = read_range(topic, partition, 0, end)
        rows = delta.filter(delta["partition"].to_numpy() == partition)
        assert kafka["_rejected"].null_count == kafka.num_rows
        for column in ("offset", "key", "timestamp", "value"):
            assert kafka[column].to_pylist() == rows[column].to_pylist(), (partition, column)


@pytest.mark.spark
def test_the_pageview_job_reads_its_events_from_kafka(pageview_broker, tmp_path):
    """generate --kafka, run --root R --kafka, results --root R: with a grace period longer than
    any event's delay nothing is late, so every window counts exactly its events with duration
    >= 30 s (computed here from the generator's own events with pandas)."""
    broker = pageview_broker
    args = ["--events", "6000", "--seed", "3", "--source-partitions", "2"]
    assert pageview.main(["generate", "--kafka", broker.bootstrap_servers, *args]) == 0
    root = str(tmp_path)
    run = cli("run", "--root", root, "--kafka", broker.bootstrap_servers, "--until-caught-up", "--commit-interval-ms", "100",
              "--grace-ms", "60000", "--max-records-per-batch", "2000")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = cli("results", "--root", root).stdout.splitlines()
    actual = sorted(tuple(line.split(",")) for line in lines[1:])
    events = generate_events(6000, seed=3).to_pandas()
    views = pd.DataFrame(list(events["value"])).assign(timestamp=events["timestamp"])
    views = views[views["duration_s"] >= 30]
    views = views.assign(window_start=views["timestamp"] - views["timestamp"] % 5000)
    expected = sorted((c, str(s), str(s + 5000), str(n)) for (c, s), n in views.groupby(["category", "window_start"]).size().items())
    assert actual == expected and len(expected) > 50
