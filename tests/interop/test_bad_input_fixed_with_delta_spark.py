"""The user's own way past bad input, with delta-spark as the issue's user tried it: a delta-spark
append with a null ``partition`` stops the job (``on_bad_record = "fail"``); ``DELETE FROM
delta.`<topic>` WHERE partition IS NULL`` removes the file, and the next run goes on, exactly: the
counts are those of the good records alone (counted here, not by the project's code)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import ApplicationFailedError, StreamsApp
from deltastreams.streams.spark import kafka_partition

pytestmark = pytest.mark.spark

GOOD = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)]


def topology():
    builder = StreamsBuilder()
    builder.stream("events").group_by_key().count().to_stream().to("counts")
    return builder.build()


def test_a_delete_with_delta_spark_lets_a_stopped_job_go_on(delta, tmp_path):
    spark = delta
    topic = create_topic(str(tmp_path), "events", partitions=2, key_type=pa.string(), value_type=pa.int64())
    topic.append(pa.table({"key": [k for k, _ in GOOD[:3]], "value": pa.array([v for _, v in GOOD[:3]], pa.int64()), "timestamp": pa.array([1, 2, 3], pa.int64())}))
    bad = spark.createDataFrame([("x", 10, 10), ("y", 11, 11)], "key string, value long, timestamp long").withColumn("partition", F.lit(None).cast("int"))
    bad.write.format("delta").mode("append").save(topic.uri)  # version 2: a null partition
    good = spark.createDataFrame(GOOD[3:], "key string, value long").withColumn("timestamp", F.col("value"))
    good.withColumn("partition", kafka_partition("key", 2)).write.format("delta").mode("append").save(topic.uri)  # version 3
    config = StreamsConfig.load({"application_id": "counter", "root": str(tmp_path), "commit_interval_ms": 100, "on_bad_record": "fail", "retention.enabled": "false"})
    with pytest.raises(ApplicationFailedError, match="version 2"):
        StreamsApp(topology(), config, spark=spark).run(until_caught_up=True, timeout_s=120)
    assert spark.sql(f"DELETE FROM delta.`{topic.uri}` WHERE partition IS NULL").collect()[0][0] == 2
    StreamsApp(topology(), config, spark=spark).run(until_caught_up=True, timeout_s=120)
    latest = {row["key"]: row["value"] for row in Topic.open(str(tmp_path), "counts").read().to_pylist()}
    assert latest == dict(Counter(k for k, _ in GOOD))
