"""A stream joined with a global table on real Spark and Delta tables: the table's topic has more
partitions than the stream's (no co-partitioning), and every task reads all of them. Each run
first appends table updates (some deletes), then stream records; every record must meet the table
as it stands after all updates appended before it, computed here with a dict."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("left", [False, True])
def test_every_task_joins_the_whole_global_table_as_it_stood(spark, tmp_path, left):
    root, rng = str(tmp_path), random.Random(11 + left)
    create_topic(root, "orders", partitions=2, key_type=pa.string(), value_type=pa.string())
    create_topic(root, "products", partitions=3, key_type=pa.string(), value_type=pa.string())
    builder = StreamsBuilder()
    products = builder.global_table("products", name="products-store")
    orders = builder.stream("orders")
    join = orders.left_join if left else orders.join
    join(products, lambda order, value: value.split("@")[1], lambda order, product: f"{order}:{product}").to("priced")
    config = StreamsConfig.load({"application_id": "global", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 40})
    table: dict[str, str] = {}
    expected = []
    for run in range(3):
        updates = [(f"p{rng.randrange(30)}", None if rng.random() < 0.2 else f"v{run}.{i}") for i in range(60)]
        Topic.open(root, "products").append(pa.table({"key": [k for k, _ in updates], "value": pa.array([v for _, v in updates], pa.string()), "timestamp": pa.array([0] * 60, pa.int64())}))
        for key, value in updates:
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
        orders_rows = [(f"c{rng.randrange(20)}", f"o{run}.{i}@p{rng.randrange(35)}") for i in range(150)]
        Topic.open(root, "orders").append(pa.table({"key": [k for k, _ in orders_rows], "value": [v for _, v in orders_rows], "timestamp": pa.array(range(150), pa.int64())}))
        for key, value in orders_rows:
            product = table.get(value.split("@")[1])
            if product is not None or left:
                expected.append((key, f"{value}:{product}"))
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    output = Topic.open(root, "priced").read()
    assert sorted(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True)) == sorted(expected)
    assert len(expected) > 200
