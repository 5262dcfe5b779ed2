"""A foreign-key join on real Spark and Delta tables: subscriptions and responses cross two
internal Delta topics (sub-topologies that feed each other), batches cut the updates anywhere,
and the latest joined row per key is what the test driver gives for the same updates and what
the final tables give (computed here with plain dicts)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder, TopologyTestDriver
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


def _orders_with_customers(kind: str):
    builder = StreamsBuilder()
    orders, customers = builder.table("orders"), builder.table("customers")
    join = getattr(orders, kind)
    join(customers, lambda order: order.split("|")[1], lambda order, customer: f"{order}@{customer}", name="order-customer").to_stream().to("enriched")
    return builder.build()


def _updates(rng: random.Random, count: int) -> tuple[list, list]:
    orders = [(f"o{rng.randrange(30)}", None if rng.random() < 0.15 else f"item{rng.randrange(5)}|c{rng.randrange(8)}") for _ in range(count)]
    customers = [(f"c{rng.randrange(8)}", None if rng.random() < 0.15 else f"name{rng.randrange(100)}") for _ in range(count // 2)]
    return orders, customers


def _append(root: str, topic: str, rows: list, first_ts: int) -> None:
    Topic.open(root, topic).append(
        pa.table({"key": [k for k, _ in rows], "value": pa.array([v for _, v in rows], pa.string()), "timestamp": pa.array(range(first_ts, first_ts + len(rows)), pa.int64())})
    )


def _final(rows: list) -> dict:
    state: dict = {}
    for key, value in rows:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


# One kind only, to keep the suite short: the left join sends every kind of subscription an
# inner join sends but one (and the differential oracle checks both on the test driver).
@pytest.mark.parametrize("kind", ["left_join"])
def test_spark_fk_join_ends_in_the_join_of_the_final_tables_as_the_test_driver(spark, tmp_path, kind):
    root, rng = str(tmp_path), random.Random(17)
    # Different partition counts: the subscription topic is partitioned like customers, the
    # response topic like orders (Kafka's co-partitioning).
    for topic, partitions in (("orders", 2), ("customers", 3)):
        create_topic(root, topic, partitions=partitions, key_type=pa.string(), value_type=pa.string())
    config = StreamsConfig.load({"application_id": "fk", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 40, "caching": False})
    all_orders, all_customers = [], []
    with TopologyTestDriver(_orders_with_customers(kind), {"caching": False}) as driver:
        ts = 0
        for _ in range(2):
            orders, customers = _updates(rng, 60)
            _append(root, "customers", customers, ts)
            _append(root, "orders", orders, ts + len(customers))
            for key, value in customers:
                driver.pipe_input("customers", key, value, ts)
                ts += 1
            for key, value in orders:
                driver.pipe_input("orders", key, value, ts)
                ts += 1
            all_orders += orders
            all_customers += customers
            StreamsApp(_orders_with_customers(kind), config, spark=spark).run(until_caught_up=True, timeout_s=240)
        expected_driver = {r.key: r.value for r in driver.read_output("enriched")}
    final_orders, final_customers = _final(all_orders), _final(all_customers)
    expected = {
        k: f"{v}@{final_customers.get(v.split('|')[1])}"
        for k, v in final_orders.items()
        if kind == "left_join" or v.split("|")[1] in final_customers
    }
    output = Topic.open(root, "enriched").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = dict(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True))
    assert {k: v for k, v in latest.items() if v is not None} == expected
    assert {k: v for k, v in expected_driver.items() if v is not None} == expected
