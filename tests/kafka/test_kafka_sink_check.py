"""The checker behind the Kafka sink's kill tests and the crash harness (deltastreams.devtools.harness.kafka_sink_check)
finds what exactly-once into Kafka rules out: a duplicate, a missing record, two records swapped,
and it skips aborted records as a read_committed reader does. Against Apache Kafka, on a Delta
topic written here with deltalake in the pageview output's layout."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
from confluent_kafka import Producer
from deltalake import write_deltalake

from deltastreams.devtools.harness.kafka_sink_check import check_mirror

ROWS = [(p, o, 1000 + o, 5000 * o, f"category-{p}{o}", o + 1) for p in range(2) for o in range(4)]


def write_delta_topic(root, name):
    partition, offset, timestamp, start, category, count = zip(*ROWS, strict=True)
    table = pa.table({
        "partition": pa.array(partition, pa.int32()), "offset": pa.array(offset, pa.int64()), "timestamp": pa.array(timestamp, pa.int64()),
        "window_start": pa.array(start, pa.int64()), "window_end": pa.array([s + 5000 for s in start], pa.int64()),
        "category": category, "count": pa.array(count, pa.int64()),
    })
    write_deltalake(str(root / "topics" / name), table, partition_by=["partition"])


def publish(broker, topic, rows, *, transactional_id=None, abort=False):
    settings = {"bootstrap.servers": broker.bootstrap_servers}
    if transactional_id:
        settings["transactional.id"] = transactional_id
    producer = Producer(settings)
    if transactional_id:
        producer.init_transactions(30)
        producer.begin_transaction()
    for partition, _, timestamp, start, category, count in rows:
        producer.produce(topic, key=category.encode() + struct.pack(">q", start), value=json.dumps(count).encode(), partition=partition, timestamp=timestamp)
    assert producer.flush(10) == 0
    if transactional_id:
        (producer.abort_transaction if abort else producer.commit_transaction)(10)


def check(broker, root, topic):
    return check_mirror(root, topic, broker.bootstrap_servers, key_column="category", value_column="count")


def test_an_exact_mirror_passes_and_aborted_records_are_skipped(broker, topic_name, tmp_path):
    broker.create_topic(topic_name, 2)
    write_delta_topic(tmp_path, topic_name)
    publish(broker, topic_name, ROWS[:3], transactional_id=f"{topic_name}-a", abort=True)
    publish(broker, topic_name, ROWS, transactional_id=f"{topic_name}-c")
    result = check(broker, tmp_path, topic_name)
    assert result.violations == [] and (result.records, result.kafka_records, result.aborted_records, result.partitions) == (8, 8, 3, 2)


def test_a_duplicate_a_gap_and_a_swap_are_violations(broker, topic_name, tmp_path):
    broker.create_topic(topic_name, 2)
    write_delta_topic(tmp_path, topic_name)
    # Partition 0: offset 1 twice, offset 2 missing; partition 1: offsets 2 and 3 swapped.
    publish(broker, topic_name, [ROWS[0], ROWS[1], ROWS[1], ROWS[3], ROWS[4], ROWS[5], ROWS[7], ROWS[6]])
    result = check(broker, tmp_path, topic_name)
    assert len(result.violations) == 2
    assert result.violations[0].startswith("partition 0: 4 records in Delta, 4 in Kafka: 1 missing, 1 not in Delta, 1 duplicated; the first difference at position 2")
    assert result.violations[1].startswith("partition 1: 4 records in Delta, 4 in Kafka: 0 missing, 0 not in Delta, 0 duplicated; the first difference at position 2")
