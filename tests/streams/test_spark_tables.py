"""Tables and table-table joins on real Spark and Delta tables: whatever the batches, the join's
latest row per key is the join of both tables' final states (computed here with plain dicts).

Caching is off, as in Kafka's tests: with it on, Kafka forwards table updates when the cache
flushes, and a key deleted on both sides within one commit leaves an inner join's last row in
place (neither side finds the other), as we read Kafka's code; this implementation does the same."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


def append_updates(root, topic, rng, keys, count):
    rows = []
    for _ in range(count):
        key = f"k{rng.randrange(keys)}"
        rows.append((key, None if rng.random() < 0.2 else rng.randrange(1000)))
    Topic.open(root, topic).append(
        pa.table({"key": [k for k, _ in rows], "value": pa.array([v for _, v in rows], pa.int64()), "timestamp": pa.array(range(len(rows)), pa.int64())})
    )
    return rows


def final_state(updates):
    state = {}
    for key, value in updates:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_the_latest_joined_row_per_key_is_the_join_of_the_final_tables(spark, tmp_path, kind):
    root, rng = str(tmp_path), random.Random(hash(kind) % 1000)
    for topic in ("left", "right"):
        create_topic(root, topic, partitions=2, key_type=pa.string(), value_type=pa.int64())
    builder = StreamsBuilder()
    left, right = builder.table("left"), builder.table("right")
    getattr(left, kind)(right, lambda a, b: f"{a}|{b}").to_stream().to("joined")
    updates = {"left": [], "right": []}
    config = StreamsConfig.load({"application_id": "tables", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 150, "caching": False})
    for _ in range(3):  # three runs, each over a few appends to both tables
        for _ in range(2):
            for topic in ("left", "right"):
                updates[topic] += append_updates(root, topic, rng, keys=60, count=120)
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    lefts, rights = final_state(updates["left"]), final_state(updates["right"])
    if kind == "join":
        keys = lefts.keys() & rights.keys()
    elif kind == "left_join":
        keys = lefts.keys()
    else:
        keys = lefts.keys() | rights.keys()
    expected = {k: f"{lefts.get(k)}|{rights.get(k)}" for k in keys}
    output = Topic.open(root, "joined").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = {}
    for key, value in zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True):
        latest[key] = value  # a key's updates share a partition, in offset order
    assert {k: v for k, v in latest.items() if v is not None} == expected


def test_a_regrouped_table_counts_its_final_rows_per_group(spark, tmp_path):
    # Change pairs cross a real repartition topic (struct {new, old} values); users move
    # between regions and leave, batches cut the updates anywhere.
    root, rng = str(tmp_path), random.Random(5)
    create_topic(root, "users", partitions=2, key_type=pa.string(), value_type=pa.string())
    builder = StreamsBuilder()
    builder.table("users").group_by(lambda user, region: (region, user)).count(name="per-region").to_stream().to("regions")
    config = StreamsConfig.load({"application_id": "regroup", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 70, "num_partitions": 3})
    updates = []
    for _ in range(3):
        for _ in range(3):
            rows = [(f"u{rng.randrange(50)}", None if rng.random() < 0.15 else rng.choice(["eu", "us", "asia", "africa"])) for _ in range(60)]
            Topic.open(root, "users").append(pa.table({"key": [k for k, _ in rows], "value": pa.array([v for _, v in rows], pa.string()), "timestamp": pa.array(range(60), pa.int64())}))
            updates += rows
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    final = final_state(updates)
    expected = {region: sum(1 for r in final.values() if r == region) for region in {v for _, v in updates if v is not None}}
    output = Topic.open(root, "regions").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = dict(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True))
    assert latest == expected


def test_aggregated_tables_joined_and_regrouped_end_in_the_final_aggregates(spark, tmp_path):
    # A count and a sum of the same clicks joined table-table, and the count re-grouped into a
    # histogram (users per count): the last row per key is the final aggregates'.
    root, rng = str(tmp_path), random.Random(8)
    create_topic(root, "clicks", partitions=2, key_type=pa.string(), value_type=pa.int64())
    builder = StreamsBuilder()
    clicks = builder.stream("clicks")
    counts = clicks.group_by_key().count(name="click-counts")
    sums = clicks.group_by_key().reduce(lambda total, value: total + value, name="click-sums")
    counts.join(sums, lambda count, total: f"{count}/{total}").to_stream().to("count-and-sum")
    counts.group_by(lambda user, count: (count, user), name="by-count").count(name="users-per-count").to_stream().to("histogram")
    config = StreamsConfig.load({"application_id": "aggregated", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 90})
    rows = []
    for _ in range(2):
        batch = [(f"u{rng.randrange(40)}", rng.randrange(1, 9)) for _ in range(300)]
        Topic.open(root, "clicks").append(pa.table({"key": [k for k, _ in batch], "value": pa.array([v for _, v in batch], pa.int64()), "timestamp": pa.array(range(300), pa.int64())}))
        rows += batch
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    counts_by_user, sums_by_user = Counter(k for k, _ in rows), Counter()
    for key, value in rows:
        sums_by_user[key] += value

    def latest(topic):
        output = Topic.open(root, topic).read().sort_by([("partition", "ascending"), ("offset", "ascending")])
        last = dict(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True))
        return {k: v for k, v in last.items() if v}

    assert latest("count-and-sum") == {k: f"{counts_by_user[k]}/{sums_by_user[k]}" for k in counts_by_user}
    assert latest("histogram") == dict(Counter(counts_by_user.values()))
