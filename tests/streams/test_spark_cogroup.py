"""A cogroup on real Spark and Delta tables: two co-partitioned topics and a third whose key is
changed (so it reaches the cogroup through its own repartition topic), folded into one table by
three aggregators. Each key's last revision is what an independent computation over the input
gives (the aggregators add and subtract, so the order of the records does not matter): every
record folded exactly once, across batches and two runs of the application."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder, TopologyError
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


def build():
    builder = StreamsBuilder()
    purchases, refunds, clicks = builder.stream("purchases"), builder.stream("refunds"), builder.stream("clicks")
    by_user = clicks.map(lambda session, user: (user, 1)).group_by_key(name="clicks-by-user")
    (purchases.group_by_key().cogroup(lambda user, amount, total: total + amount)
     .cogroup(refunds.group_by_key(), lambda user, amount, total: total - amount)
     .cogroup(by_user, lambda user, one, total: total + one)
     .aggregate(lambda: 0, name="balance")
     .to_stream().to("balances"))
    return builder.build()


def test_a_cogroup_on_spark_matches_an_independent_computation(spark, tmp_path):
    root, rng = str(tmp_path), random.Random(11)
    for topic, value_type in (("purchases", pa.int64()), ("refunds", pa.int64()), ("clicks", pa.string())):
        create_topic(root, topic, partitions=2, key_type=pa.string(), value_type=value_type)
    config = StreamsConfig.load({"application_id": "cogroup", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 50})
    expected: dict[str, int] = {}
    clock = 0
    for _ in range(2):  # two runs: the second resumes from the first's committed state
        for topic in ("purchases", "refunds", "clicks"):
            keys, values, stamps = [], [], []
            for _ in range(120):
                clock += rng.randrange(0, 5)
                user = f"u{rng.randrange(7)}"
                if topic == "clicks":
                    keys.append(f"s{rng.randrange(30)}")
                    values.append(user)
                    expected[user] = expected.get(user, 0) + 1
                else:
                    amount = rng.randrange(1, 100)
                    keys.append(user)
                    values.append(amount)
                    expected[user] = expected.get(user, 0) + (amount if topic == "purchases" else -amount)
                stamps.append(clock)
            Topic.open(root, topic).append(pa.table({"key": keys, "value": values, "timestamp": pa.array(stamps, pa.int64())}))
        StreamsApp(build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    output = Topic.open(root, "balances").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = dict(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True))
    assert latest == expected


def test_cogrouped_topics_must_be_copartitioned(spark, tmp_path):
    """As Kafka's ensureCopartitionWith: the cogroup reads its inputs partition by partition."""
    root = str(tmp_path)
    for topic, partitions, value_type in (("purchases", 2, pa.int64()), ("refunds", 3, pa.int64()), ("clicks", 2, pa.string())):
        create_topic(root, topic, partitions=partitions, key_type=pa.string(), value_type=value_type)
    config = StreamsConfig.load({"application_id": "cogroup", "root": root})
    with pytest.raises(TopologyError, match=r"cogrouped in sub-topology 0 are not co-partitioned \(purchases: 2, refunds: 3"):
        StreamsApp(build(), config, spark=spark).run(until_caught_up=True, timeout_s=60)
