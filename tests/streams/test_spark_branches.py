"""split / merge / flat_map_values on real Spark and Delta tables: branches routed by the first
predicate that holds, transformed differently, merged back and re-keyed into a count (so the
merged stream crosses a repartition topic); compared with a plain-Python computation."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import Branched, StreamsBuilder
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


def route(value):
    """The topology below, for one record: the words it counts."""
    if value % 3 == 0:
        return [f"fizz{value % 2}"]
    if value % 5 == 0:
        return ["buzz", "buzz"]
    return [f"n{value % 4}"]


def test_branches_merged_back_count_as_routed(spark, tmp_path):
    root, rng = str(tmp_path), random.Random(3)
    create_topic(root, "numbers", partitions=2, key_type=pa.string(), value_type=pa.int64())
    builder = StreamsBuilder()
    branches = (
        builder.stream("numbers")
        .split(name="route-")
        .branch(lambda k, v: v % 3 == 0, Branched.with_function(lambda s: s.map_values(lambda v: f"fizz{v % 2}"), name="fizz"))
        .branch(lambda k, v: v % 5 == 0, Branched.with_function(lambda s: s.flat_map_values(lambda v: ["buzz", "buzz"]), name="buzz"))
        .default_branch(Branched.with_function(lambda s: s.map_values(lambda v: f"n{v % 4}")))
    )
    assert sorted(branches) == ["route-0", "route-buzz", "route-fizz"]
    merged = branches["route-fizz"].merge(branches["route-buzz"]).merge(branches["route-0"])
    merged.group_by(lambda k, word: word, name="words").count(name="word-counts").to_stream().to("counts")
    config = StreamsConfig.load({"application_id": "branches", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 70})
    expected: Counter = Counter()
    for _ in range(2):
        rows = [(f"k{rng.randrange(10)}", rng.randrange(1000)) for _ in range(200)]
        Topic.open(root, "numbers").append(pa.table({"key": [k for k, _ in rows], "value": pa.array([v for _, v in rows], pa.int64()), "timestamp": pa.array(range(200), pa.int64())}))
        for _, value in rows:
            expected.update(route(value))
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    output = Topic.open(root, "counts").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = dict(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True))
    assert latest == dict(expected)
