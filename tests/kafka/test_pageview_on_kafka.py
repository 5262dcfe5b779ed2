"""The pageview example on Kafka: ``generate --kafka`` produces exactly the events ``generate
--root`` appends for the same arguments (keys, values, timestamps, partitions, offsets)."""

from __future__ import annotations

from jobs import pageview
from sinks import Topic
from sinks.kafka import end_offsets, read_range


def test_generate_to_kafka_produces_the_events_generate_appends(broker, tmp_path):
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
