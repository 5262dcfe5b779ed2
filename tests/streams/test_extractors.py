"""Topic and timestamp extractors: ``to(extractor, topics=...)`` routes each record to the topic
the function names (one of those declared; another goes to the dead-letter topic), and
``stream(topic, timestamp_extractor=...)`` gives records their event time before anything sees
them (windows, lateness, the task's order); the test driver and Spark agree."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import TopologyError
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder, TimeWindows, TopologyTestDriver
from deltastreams.streams.app import StreamsApp


def route(key, value):
    return "big" if value["amount"] > 10 else ("small" if value["amount"] >= 0 else "negative")


def build():
    builder = StreamsBuilder()
    payments = builder.stream("payments", timestamp_extractor=lambda key, value, ts: value["paid_at"])
    payments.to(route, topics=["big", "small"])
    payments.group_by_key().windowed_by(TimeWindows.of_size(100)).count(name="per-window").to_stream().to("counts")
    return builder.build()


PAYMENTS = [("a", 5, 150), ("b", 50, 160), ("a", -1, 170), ("a", 12, 20), ("b", 3, 199)]


def values(records):
    return [(r.key, r.value["amount"]) for r in records]


def test_records_go_to_the_topic_their_extractor_names_and_carry_the_extracted_time():
    driver = TopologyTestDriver(build(), {"caching": False})
    for key, amount, paid_at in PAYMENTS:
        driver.pipe_input("payments", key, {"amount": amount, "paid_at": paid_at}, 0)
    big = driver.read_output("big")
    assert values(big) == [("b", 50), ("a", 12)]
    assert [r.timestamp for r in big] == [160, 20]
    assert values(driver.read_output("small")) == [("a", 5), ("b", 3)]
    assert ["negative" in r.value["reason"] for r in driver.dead_letters()] == [True]
    # Event time from the extractor: (a, 20) is late for window [0, 100) once stream time is 170.
    counts = [(r.key, r.window_start, r.value) for r in driver.read_output("counts")]
    assert counts == [("a", 100, 1), ("b", 100, 1), ("a", 100, 2), ("b", 100, 2)]
    assert driver.dropped_records == 1


def test_an_extractor_needs_its_topics_declared():
    builder = StreamsBuilder()
    with pytest.raises(TopologyError, match="declare the topics"):
        builder.stream("in").to(route)


@pytest.mark.spark
def test_extractors_on_spark_match_the_test_driver(spark, tmp_path):
    root = str(tmp_path)
    value_type = pa.struct([("amount", pa.int64()), ("paid_at", pa.int64())])
    create_topic(root, "payments", partitions=2, key_type=pa.string(), value_type=value_type)
    Topic.open(root, "payments").append(
        pa.table(
            {
                "key": [k for k, _, _ in PAYMENTS],
                "value": pa.array([{"amount": a, "paid_at": p} for _, a, p in PAYMENTS], value_type),
                "timestamp": pa.array([0] * len(PAYMENTS), pa.int64()),
            }
        )
    )
    config = StreamsConfig.load({"application_id": "extractors", "root": root, "commit_interval_ms": 100})
    StreamsApp(build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    big = Topic.open(root, "big").read()
    amounts = [v["amount"] for v in big["value"].to_pylist()]
    assert sorted(zip(big["key"].to_pylist(), amounts, big["timestamp"].to_pylist(), strict=True)) == [("a", 12, 20), ("b", 50, 160)]
    assert Topic.open(root, "small").read().num_rows == 2
