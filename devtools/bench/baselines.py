"""What a user would otherwise run, on the same pageview data, for the benchmark's comparisons.

- Plain Spark Structured Streaming: a file source over the input topic's own Parquet files,
  ``withWatermark`` (the grace period) + ``groupBy(window(5 s), category).count()``, RocksDB state
  store with changelog checkpointing, update mode, the same batch sizes (whole files per trigger)
  and shuffle partitions, each batch's updates written to a Delta table.
- A single-process pyarrow group-by of the same computation: the practical limit (no order, no
  state across batches, no revisions, no commits).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import write_deltalake

from deltastreams.jobs.pageview import INPUT_TOPIC
from deltastreams.sinks import open_table, topic_uri

_SCHEMA = "offset BIGINT, timestamp BIGINT, user_id STRING, page_id STRING, category STRING, duration_s INT, partition INT"


def plain_structured_streaming(
    spark, root: str, *, events: int, records_per_batch: int, interval_ms: int, partitions: int, window_ms: int, grace_ms: int, timeout_s: float = 1800
) -> float:
    """Seconds from query start until every event was processed (output committed)."""
    from pyspark.sql import functions as F

    source = topic_uri(root, INPUT_TOPIC)
    files = open_table(source).get_add_actions(flatten=True)
    rows_per_file = max(1, events // max(1, pa.table(files).num_rows))
    out = Path(root) / "baseline" / f"plain-{interval_ms}"
    shutil.rmtree(out, ignore_errors=True)
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    counts = (
        spark.readStream.schema(_SCHEMA)
        .option("maxFilesPerTrigger", max(1, records_per_batch // rows_per_file))
        .parquet(source)
        .filter("duration_s >= 30")
        .withColumn("ts", F.timestamp_millis("timestamp"))
        .withWatermark("ts", f"{grace_ms} milliseconds")
        .groupBy(F.window("ts", f"{window_ms} milliseconds"), "category")
        .count()
    )
    table = str(out / "counts")

    def write(frame, batch_id):
        updates = frame.select("category", F.col("window.start").cast("long").alias("window_start"), "count").toArrow()
        if updates.num_rows:
            write_deltalake(table, updates, mode="append")

    started = time.perf_counter()
    query = (
        counts.writeStream.outputMode("update")
        .foreachBatch(write)
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(processingTime=f"{interval_ms} milliseconds")
        .start()
    )
    try:
        while time.perf_counter() - started < timeout_s:
            progress = query.recentProgress
            if sum(p["numInputRows"] for p in progress) >= events and not query.status["isTriggerActive"]:
                break
            if query.exception() is not None:
                raise RuntimeError(f"plain Structured Streaming failed: {query.exception()}")
            time.sleep(0.05)
        return time.perf_counter() - started
    finally:
        query.stop()
        spark.conf.unset("spark.sql.streaming.stateStore.providerClass")


def pyarrow_groupby(root: str, *, window_ms: int) -> tuple[float, int]:
    """Seconds to read the input and count per (category, window) in one process; windows."""
    started = time.perf_counter()
    table = open_table(topic_uri(root, INPUT_TOPIC)).to_pyarrow_dataset().to_table(columns=["timestamp", "category", "duration_s"], use_threads=False)
    kept = table.filter(pc.greater_equal(table["duration_s"], 30))
    start = pc.multiply(pc.divide(kept["timestamp"], window_ms), window_ms)  # integer division: the window's start
    result = pa.table({"category": kept["category"], "window_start": start}).group_by(["category", "window_start"]).aggregate([("category", "count")])
    return time.perf_counter() - started, result.num_rows
