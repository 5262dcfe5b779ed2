"""Exactly-once into Kafka, proven by kill -9: the pageview job publishes its counts to Kafka
(``--output-kafka``), one Kafka transaction per decided batch. The driver is SIGKILLed at each of
the Kafka sink's named points in turn (before the transaction; after the records were handed to
the producer; once they are in the partitions' logs; once the batch number is in the
transaction; after the commit): each run is killed at one point, and the next run recovers from
it before being killed at the next; a last run finishes. A read_committed reader then finds every
record of the Delta output topic in Kafka exactly once, partition by partition, in order, and
nothing else (:mod:`deltastreams.devtools.harness.kafka_sink_check`: deltalake on one side, confluent-kafka on the other,
no code of the sink).

One chain of runs for all points, one test per point over it: each Spark start costs ~20 s, and a
crash run plus a restart per point would double the runs. A second instance fencing the first's
producer: tests/kafka/test_kafka_publisher.py."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, TopicPartition

from deltastreams.devtools.harness.kafka_sink_check import MirrorCheck, check_mirror
from deltastreams.jobs.pageview import OUTPUT_TOPIC, generate
from deltastreams.streams.runtime import KAFKA_SINK_CRASH_POINTS

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LEAVES_AN_OPEN_TRANSACTION = {"before_kafka_send_offsets", "before_kafka_commit"}
"""Points where the batch's records are in the partitions' logs, in a transaction the next run
must abort (after_kafka_produce may die before librdkafka sent any)."""
KAFKA_LACKS_THE_BATCH = {"before_kafka_publish", "after_kafka_produce", "before_kafka_send_offsets", "before_kafka_commit"}
RECOVERED = "published 1 decided batch(es) Kafka did not have yet"


@dataclass
class Kill:
    point: str
    run: subprocess.CompletedProcess
    open_records: int
    """Records of a transaction still open in Kafka right after the kill (high watermark minus
    last stable offset, over the partitions)."""
    next_run: subprocess.CompletedProcess | None = None


@dataclass
class Chain:
    kills: dict[str, Kill]
    final: subprocess.CompletedProcess
    mirror: MirrorCheck


def cli(*args, crash_at=None):
    env = {k: v for k, v in os.environ.items() if k != "DELTASTREAMS_CRASH_AT"}
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "deltastreams.jobs.pageview", *args], capture_output=True, text=True, timeout=600, env=env)


def open_transaction_records(kafka: str) -> int:
    total = 0
    for isolation, sign in (("read_uncommitted", 1), ("read_committed", -1)):
        consumer = Consumer({"bootstrap.servers": kafka, "group.id": "kill-points", "isolation.level": isolation})
        partitions = consumer.list_topics(OUTPUT_TOPIC, timeout=10).topics[OUTPUT_TOPIC].partitions
        total += sign * sum(consumer.get_watermark_offsets(TopicPartition(OUTPUT_TOPIC, p), timeout=10, cached=False)[1] for p in partitions)
        consumer.close()
    return total


@pytest.fixture(scope="module")
def chain(broker, tmp_path_factory):
    broker.delete_topic(OUTPUT_TOPIC)  # the session's broker; the output topic's name is fixed
    root, kafka = str(tmp_path_factory.mktemp("kill-points")), broker.bootstrap_servers
    run = ["run", "--root", root, "--output-kafka", kafka, "--until-caught-up", "--commit-interval-ms", "100", "--max-records-per-batch", "1000"]
    kills: dict[str, Kill] = {}
    previous = None
    for point in KAFKA_SINK_CRASH_POINTS:
        # Three new batches a run: the second publish of the run is always one of them.
        generate(root, 3000, batches=3)
        crashed = cli(*run, crash_at=f"{point}@2")
        kills[point] = Kill(point, crashed, open_transaction_records(kafka) if crashed.returncode == -9 else -1)
        if previous is not None:
            previous.next_run = crashed
        previous = kills[point]
    final = cli(*run)
    previous.next_run = final
    mirror = check_mirror(root, OUTPUT_TOPIC, kafka, key_column="category", value_column="count")
    return Chain(kills, final, mirror)


def test_the_chain_covers_every_kafka_sink_point():
    assert set(KAFKA_SINK_CRASH_POINTS) == KAFKA_LACKS_THE_BATCH | {"after_kafka_commit"}


@pytest.mark.parametrize("point", KAFKA_SINK_CRASH_POINTS)
def test_a_kill_inside_the_kafka_sink_leaves_every_record_in_kafka_exactly_once(chain, point):
    kill = chain.kills[point]
    assert kill.run.returncode == -9, kill.run.stderr[-2000:]
    assert f"crash point {point} reached" in kill.run.stderr
    if point in LEAVES_AN_OPEN_TRANSACTION:
        assert kill.open_records > 0  # what read_committed readers must never see
    elif point != "after_kafka_produce":
        assert kill.open_records == 0
    recovered = RECOVERED in kill.next_run.stderr
    assert recovered == (point in KAFKA_LACKS_THE_BATCH), kill.next_run.stderr[-2000:]
    assert chain.final.returncode == 0, chain.final.stderr[-2000:]
    mirror = chain.mirror
    assert mirror.violations == [], mirror.summary()
    assert mirror.records == mirror.kafka_records and mirror.records > 200 and mirror.partitions == 3, mirror.summary()
    assert mirror.aborted_records >= sum(k.open_records for k in chain.kills.values() if k.point in LEAVES_AN_OPEN_TRANSACTION) > 0, mirror.summary()
