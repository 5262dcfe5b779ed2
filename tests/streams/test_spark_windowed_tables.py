"""Windowed tables joined and re-grouped on real Spark and Delta tables give the test driver's
records: the joined rows per (key, window) end where the driver's end, and the re-grouped
totals, whose per-key order the batches cannot change (caching off), are the driver's, record
for record."""

from __future__ import annotations

import random
from collections import defaultdict

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder, TimeWindows, TopologyTestDriver
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark

WINDOWS = TimeWindows.of_size_and_grace(100, 10_000)  # a grace no batch order can outrun


def build():
    builder = StreamsBuilder()
    clicks = builder.stream("clicks").group_by_key().windowed_by(WINDOWS).count(name="clicks-per-window")
    views = builder.stream("views").group_by_key().windowed_by(WINDOWS).count(name="views-per-window")
    clicks.outer_join(views, lambda c, v: f"{c}/{v}", name="clicks-and-views").to_stream().to("joined")
    clicks.group_by(lambda wk, c: (wk.key, c), name="by-user").reduce(lambda a, v: a + v, lambda a, v: a - v, name="clicks-per-user").to_stream().to("totals")
    return builder.build()


def workload():
    rng = random.Random(3)
    return {topic: [(f"u{rng.randrange(8)}", "x", rng.randrange(600)) for _ in range(120)] for topic in ("clicks", "views")}


def by_key(records):
    """Per key, its records in order (a key's records keep their order on any partitioning)."""
    out = defaultdict(list)
    for key, start, value in records:
        out[key].append((start, value))
    return dict(out)


def latest_per_window(records):
    latest = {}
    for key, start, value in records:
        latest[(key, start)] = value
    return {k: v for k, v in latest.items() if v is not None}


def test_windowed_tables_joined_and_regrouped_on_spark_give_the_test_drivers_records(spark, tmp_path):
    root, inputs = str(tmp_path), workload()
    driver = TopologyTestDriver(build(), {"caching": False})
    for topic, rows in inputs.items():
        driver.pipe_inputs(topic, rows)
    expected = {topic: [(r.key, r.window_start, r.value) for r in driver.read_output(topic)] for topic in ("joined", "totals")}

    for topic in inputs:
        create_topic(root, topic, partitions=2, key_type=pa.string(), value_type=pa.string())
    config = StreamsConfig.load({"application_id": "windowed-tables", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 100, "caching": False})
    for half in (slice(0, 60), slice(60, 120)):  # two runs: the second restores both windowed stores
        for topic, rows in inputs.items():
            part = rows[half]
            Topic.open(root, topic).append(
                pa.table({"key": [k for k, _, _ in part], "value": [v for _, v, _ in part], "timestamp": pa.array([t for *_, t in part], pa.int64())})
            )
        StreamsApp(build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)

    def output(topic):
        table = Topic.open(root, topic).read().sort_by([("partition", "ascending"), ("offset", "ascending")])
        starts = table["window_start"].to_pylist() if "window_start" in table.column_names else [None] * table.num_rows
        return list(zip(table["key"].to_pylist(), starts, table["value"].to_pylist(), strict=True))

    joined, totals = output("joined"), output("totals")
    assert {start for _, start, _ in joined} == {start for _, start, _ in expected["joined"]} == {0, 100, 200, 300, 400, 500}
    assert latest_per_window(joined) == latest_per_window(expected["joined"])
    assert by_key(totals) == by_key(expected["totals"])
    assert {key: values[-1][1] for key, values in by_key(totals).items()} == {key: sum(1 for k, *_ in inputs["clicks"] if k == key) for key in by_key(totals)}
