"""Topics for Spark code in the same session: read them as DataFrames, append to them.

    from deltastreams.streams.spark import topic_frame, kafka_partition
    views = topic_frame(spark, "/data", "pageview-windowed-counts")                  # batch
    live = topic_frame(spark, "/data", "pageview-windowed-counts", streaming=True)   # Delta's streaming source
    (events.withColumn("partition", kafka_partition("user_id", 2))                  # an external append
        .write.format("delta").mode("append").save(topic_uri("/data", "pageview-events")))

A DataFrame of a topic has the topic's Delta columns: ``partition``, ``offset``, ``timestamp``,
the key column, the value's columns (and ``window_start``/``window_end``, ``headers``). Batch
frames carry every record's offset, also those of records other writers appended without one
(assigned from the log, as the application reads them). Streaming frames are delta-spark's own
Delta streaming source: they need delta-spark in the session (``delta_spark = auto`` with the
jars from bin/setup), and show such records with a null offset.
"""

from __future__ import annotations

import json

import pyarrow as pa  # at module level: Spark resolves the UDF's type hints in this module's globals

from deltastreams.sinks import Topic, current_storage_options, open_table, snapshot_files
from deltastreams.streams._internal.spark import delta_spark
from deltastreams.streams._internal.spark.source import STORAGE_OPTIONS


def topic_frame(spark, root: str, name: str, *, streaming: bool = False, options: dict[str, str] | None = None):
    """The topic ``name`` under ``root`` as a DataFrame (``streaming``: a streaming one, through
    delta-spark's Delta source; ``options`` go to it, e.g. ``ignoreDeletes``)."""
    topic = Topic.open(root, name)
    if streaming:
        delta_spark.require(spark)
        return spark.readStream.format("delta").options(**(options or {})).load(topic.uri)
    if delta_spark.available(spark) and all(f.min_offset >= 0 for f in snapshot_files(open_table(topic.uri))):
        # Every file stores its offsets: Spark's own Parquet reader in the JVM, no record crosses into Python.
        return spark.read.format("delta").options(**(options or {})).load(topic.uri)
    files = topic.files()  # offsets assigned from the log to files written without them
    slices = [[p, [[f.path, f.partition, f.num_records, f.min_offset, f.max_offset] for f in files if f.partition == p]] for p in range(topic.partitions)]
    return (
        spark.read.format("deltastreams")
        .option("uri", topic.uri)
        .option("slices", json.dumps(slices))
        .option("form", "table")
        .option(STORAGE_OPTIONS, json.dumps(current_storage_options()))
        .load()
    )


def kafka_partition(key, partitions: int):
    """Kafka's default partitioner as a Spark Column: the partition a Kafka producer (and
    deltastreams) puts a record with this key in, for external appends to a topic of
    ``partitions`` partitions. ``key``: a column name or Column of the topic's key type."""
    from pyspark.sql import functions as F

    from deltastreams.sinks import partitions_for

    if partitions <= 0:
        raise ValueError(f"a topic has at least one partition, got {partitions}")

    @F.arrow_udf("int")
    def _partition(keys: pa.Array) -> pa.Array:
        return pa.array(partitions_for(keys, partitions), pa.int32())

    return _partition(F.col(key) if isinstance(key, str) else key)
