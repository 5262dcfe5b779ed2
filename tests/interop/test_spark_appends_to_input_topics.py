"""Input topics written by Spark with delta-spark are consumed exactly: batch appends and a
Structured Streaming writer, to a topic this project created and to one delta-spark created with
its defaults, while the application runs and our own writer appends to the same topic. Spark
appends no offsets (it cannot know them) and Kafka's partition (deltastreams.streams.spark.kafka_partition)."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, TopicLayout, create_topic, topic_uri
from tests.interop.conftest import assert_reads_like_us
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.spark import kafka_partition, topic_frame

pytestmark = pytest.mark.spark

PARTITIONS = 2
KEYS = 20


def _spark_made(spark, root: str, name: str) -> str:
    """A topic delta-spark creates with its defaults; the layout rides in the table's comment."""
    layout = TopicLayout.of(partitions=PARTITIONS, key_type=pa.string(), value_type=pa.string())
    uri = topic_uri(root, name)
    spark.sql(
        f"CREATE TABLE delta.`{uri}` (partition INT, offset BIGINT, timestamp BIGINT, key STRING, value STRING) "
        f"USING delta PARTITIONED BY (partition) COMMENT '{layout.to_json()}'"
    )
    return uri


def _records(spark, start: int, count: int):
    return (
        spark.range(start, start + count)
        .select(F.format_string("k%d", F.col("id") % KEYS).alias("key"), F.col("id").cast("string").alias("value"), (F.col("id") * 10).alias("timestamp"))
        .withColumn("partition", kafka_partition("key", PARTITIONS))
    )


def _our_appends(topic: Topic, stop: threading.Event) -> None:
    n = 0
    while not stop.is_set():
        keys = [f"k{(n + i) % KEYS}" for i in range(50)]
        topic.append(pa.table({"key": keys, "value": [f"ours-{n + i}" for i in range(50)], "timestamp": pa.array([n + i for i in range(50)], pa.int64())}))
        n += 50
        time.sleep(0.2)


def _appended(query) -> int:
    """Micro-batches of the streaming writer that committed rows."""
    return sum(1 for p in query.recentProgress if p["numInputRows"] > 0)


def test_spark_batch_and_streaming_appends_are_consumed_exactly_while_the_job_runs(delta, tmp_path):
    spark, root = delta, str(tmp_path)
    ours = create_topic(root, "ours-made", partitions=PARTITIONS, key_type=pa.string(), value_type=pa.string())
    theirs = _spark_made(spark, root, "spark-made")
    for uri in (ours.uri, theirs):
        _records(spark, 0, 500).write.format("delta").mode("append").save(uri)
    builder = StreamsBuilder()
    builder.stream("ours-made").merge(builder.stream("spark-made")).group_by_key().count(name="per-key").to_stream().to("counts")
    config = StreamsConfig.load({"application_id": "interop", "root": root, "commit_interval_ms": 200, "max_records_per_batch": 400})
    app = StreamsApp(builder.build(), config, spark=spark)
    app.start()
    rate = (
        spark.readStream.format("rate").option("rowsPerSecond", 500).load()
        .select(F.format_string("k%d", F.col("value") % KEYS).alias("key"), F.format_string("s%d", "value").alias("value"), F.col("value").alias("timestamp"))
        .withColumn("partition", kafka_partition("key", PARTITIONS))
    )
    stop = threading.Event()
    writer = threading.Thread(target=_our_appends, args=(ours, stop))
    writer.start()
    streams = [
        rate.writeStream.format("delta").option("checkpointLocation", str(tmp_path / f"spark-{i}")).trigger(processingTime="300 milliseconds").start(uri)
        for i, uri in enumerate((ours.uri, theirs))
    ]
    try:
        # delta-spark's streaming commit races our writer's 5 appends a second: on this 2-core
        # machine under load its batch 0 -> batch 1 took 30 s (measured), and once over 90 s in CI.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not all(_appended(q) >= 1 for q in streams):
            for query in streams:
                assert query.exception() is None, query.exception()
            time.sleep(0.5)
    finally:
        for query in streams:
            query.stop()
        stop.set()
        writer.join()
    _records(spark, 1_000, 300).write.format("delta").mode("append").save(theirs)
    app.run(until_caught_up=True, timeout_s=180)

    expected: Counter = Counter()
    for name in ("ours-made", "spark-made"):
        records = Topic.open(root, name).read()
        for p in range(PARTITIONS):  # dense offsets per partition, whoever appended
            assert records.filter(pa.compute.equal(records["partition"], p))["offset"].to_pylist() == list(range(sum(1 for q in records["partition"].to_pylist() if q == p)))
        expected.update(records["key"].to_pylist())
    # Spark's streaming writer took part while the job ran, on both topics, and so did ours.
    assert spark.read.format("delta").load(theirs).where("value LIKE 's%'").count() > 0
    values = Topic.open(root, "ours-made").read()["value"].to_pylist()
    assert sum(v.startswith("s") for v in values) > 0 and sum(v.startswith("ours-") for v in values) > 100
    counts = Topic.open(root, "counts").read()
    latest = {}
    for key, value in zip(counts["key"].to_pylist(), counts["value"].to_pylist(), strict=True):
        latest[key] = value  # partition then offset order: the last revision wins
    assert latest == dict(expected)
    assert not Topic.exists(root, "interop-dlq") or Topic.open(root, "interop-dlq").read().num_rows == 0


def test_a_batch_frame_of_a_topic_spark_appended_to_carries_the_offsets_the_log_assigns(delta, tmp_path):
    """topic_frame read every topic through delta-spark whenever it was in the session, since the
    files it checked had their offsets assigned already: rows Spark appended without offsets came
    back with a null offset. Rows of ours and Spark's, one frame, every offset the application reads."""
    spark, root = delta, str(tmp_path)
    ours = create_topic(root, "mixed", partitions=PARTITIONS, key_type=pa.string(), value_type=pa.string())
    ours.append(pa.table({"key": ["k1", "k2"], "value": ["a", "b"], "timestamp": pa.array([1, 2], pa.int64())}))
    _records(spark, 0, 30).write.format("delta").mode("append").save(ours.uri)
    frame = topic_frame(spark, root, "mixed")
    assert frame.where("offset IS NULL").count() == 0
    assert assert_reads_like_us(spark, frame, Topic.open(root, "mixed")) == 32

