"""The pageview job as a plain Spark Structured Streaming user writes it, with delta-spark, for the
peers benchmark: Kafka -> Delta through Spark's Kafka connector (``spark-sql-kafka-0-10``), or
Delta -> Delta through delta-spark's streaming source.

    python -m deltastreams.devtools.bench.peers.spark_pageview --source kafka --bootstrap-servers H:P --topic pageview-events \\
        --output OUT --checkpoint CK --events N [--commit-interval-ms 100] [--max-offsets-per-trigger N]
    python -m deltastreams.devtools.bench.peers.spark_pageview --source delta --input TABLE --output OUT --checkpoint CK --events N \\
        [--max-files-per-trigger N]

The query: JSON values parsed with ``from_json`` (Kafka) or the table's columns (Delta),
``duration_s >= 30``, a watermark of the grace period on the event time, ``groupBy(window(5 s),
category)`` with ``count`` and the newest event time (for latency), RocksDB state store with
changelog checkpointing, update mode, a processing-time trigger of the commit interval; Delta
snapshots in 2 partitions instead of 50 (see :func:`session`). Each
micro-batch's updates are appended to the output Delta table in ``foreachBatch`` with
``txnAppId``/``txnVersion`` = the batch id, Spark's idiom for exactly-once into Delta (a replayed
batch is skipped by the writer). delta-spark's streaming sink is not used: it accepts the append
and complete output modes only, and append mode emits a window only once the watermark passes it
(every result at least window + grace late, the last windows never).

The job stops once ``--events`` input rows are processed (every micro-batch's progress is
polled from the query; on a live stream the number comes later, in ``--events-file``) and writes ``--timings`` (JSON): wall-clock times of the session's
start and readiness, the query's start, every micro-batch's progress (input rows, offsets,
watermark, durations, rows dropped as late), the moment the last input row's batch was
done, and the stop.

Spark's late-row rule, as measured on Spark 4.2 (and modelled by
:func:`deltastreams.devtools.harness.pageview_reference.spark_counts`): the watermark of a batch is the newest event time of
the batches before it minus the delay; rows are dropped as late against the *previous* batch's
watermark (state is evicted against the current one), so lateness is judged up to two batches
behind the data, globally rather than per task.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

VIEW_SCHEMA = "user_id STRING, page_id STRING, category STRING, duration_s INT"
TXN_APP_ID = "pageview-spark-peer"


def session(app_name: str, shuffle_partitions: int, extra: dict[str, str] | None = None):
    """Local Spark on 2 cores with delta-spark and the Kafka connector, sized as deltastreams'
    session is (2 GiB driver heap), RocksDB state store."""
    from pyspark.sql import SparkSession

    from deltastreams.devtools.servers.jvm import spark_jars

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars", ",".join(spark_jars()))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.streaming.stateStore.providerClass", "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        # delta-spark rebuilds a table's snapshot in 50 tasks by default, for every micro-batch's
        # read and write: 3-4 s of a 100 ms trigger's batch here; the tuning a Spark user applies
        # to small tables (delta-io/delta#3351) made it ~1.5 s.
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def pageviews(spark, args: argparse.Namespace):
    """The input as (ts: timestamp, category, duration_s)."""
    from pyspark.sql import functions as F

    if args.source == "kafka":
        raw = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", args.bootstrap_servers)
            .option("subscribe", args.topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
            .load()
        )
        view = F.from_json(F.col("value").cast("string"), VIEW_SCHEMA)
        return raw.select(F.col("timestamp").alias("ts"), view.category.alias("category"), view.duration_s.alias("duration_s"))
    table = (
        spark.readStream.format("delta")
        .option("startingVersion", 0)  # version by version, so a batch's rows are known by its offsets
        .option("maxFilesPerTrigger", args.max_files_per_trigger)
        .load(args.input)
    )
    return table.select(F.timestamp_millis("timestamp").alias("ts"), "category", "duration_s")


def windowed_counts(views, *, window_ms: int, grace_ms: int, min_duration_s: int):
    from pyspark.sql import functions as F

    return (
        views.filter(F.col("duration_s") >= min_duration_s)
        .withWatermark("ts", f"{grace_ms} milliseconds")
        .groupBy(F.window("ts", f"{window_ms} milliseconds"), "category")
        .agg(F.count("*").alias("count"), F.max("ts").alias("newest"))
        .select(
            "category",
            F.unix_millis(F.col("window.start")).alias("window_start"),
            F.unix_millis(F.col("window.end")).alias("window_end"),
            "count",
            F.unix_millis("newest").alias("newest"),
        )
    )


def run(spark, args: argparse.Namespace, timings: dict) -> None:
    from pyspark.sql import functions as F

    batches: list[dict] = []

    def append(frame, batch_id: int) -> None:
        (
            frame.withColumn("batch_id", F.lit(batch_id))
            .write.format("delta")
            .mode("append")
            .option("txnAppId", TXN_APP_ID)
            .option("txnVersion", batch_id)
            .save(args.output)
        )

    counts = windowed_counts(pageviews(spark, args), window_ms=args.window_ms, grace_ms=args.grace_ms, min_duration_s=args.min_duration_s)
    timings["query_start"] = time.time()
    query = (
        counts.writeStream.outputMode("update")
        .foreachBatch(append)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime=f"{args.commit_interval_ms} milliseconds")
        .start()
    )
    try:
        while query.isActive:
            news = _collect_progress(query, batches)
            if sum(b["numInputRows"] for b in batches) >= expected_events(args):
                timings["done"] = time.time()
                break
            if not news:
                time.sleep(0.05)
        if query.exception() is not None:
            raise RuntimeError(f"the Spark query failed: {query.exception()}")
    finally:
        query.stop()
        timings["batches"] = [_batch_summary(b) for b in batches]


def _collect_progress(query, batches: list[dict]) -> bool:
    """Append the progress of every micro-batch finished since the last call (False: none new).

    Polled, not heard through a Python StreamingQueryListener: pyspark builds each listener
    event from the JVM's object field by field over py4j, on Spark's listener thread, which cost
    deltastreams' own application half a core at a 100 ms interval until it dropped its listener
    (2ae81a9). Here a poll is three py4j calls (isActive, lastProgress, its batchId), and one
    more per new batch.
    """
    last = query._jsq.lastProgress()
    seen = batches[-1]["batchId"] if batches else -1
    if last is None or last.batchId() <= seen:
        return False
    if last.batchId() == seen + 1:
        batches.append(json.loads(last.json()))
    else:  # batches finished between two polls: Spark keeps the recent ones (100 by default)
        recent = [json.loads(p.json()) for p in query._jsq.recentProgress()]
        batches.extend(p for p in recent if p["batchId"] > seen)
    return True


def expected_events(args: argparse.Namespace) -> float:
    """``--events``, or the number in ``--events-file`` once it exists (until then: no end)."""
    if args.events_file is None:
        return args.events
    try:
        with open(args.events_file) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return float("inf")


def _batch_summary(progress: dict) -> dict:
    source = progress["sources"][0]
    state = progress["stateOperators"][0] if progress["stateOperators"] else {}
    return {
        "batch_id": progress["batchId"],
        "rows": progress["numInputRows"],
        "timestamp": progress["timestamp"],
        "duration_ms": progress["durationMs"],
        "watermark": progress.get("eventTime", {}).get("watermark"),
        "end_offset": source["endOffset"],
        "dropped_late": state.get("numRowsDroppedByWatermark", 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.peers.spark_pageview", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("kafka", "delta"), required=True)
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--topic", default="pageview-events")
    parser.add_argument("--input", help="the input Delta table (--source delta)")
    parser.add_argument("--output", required=True, help="the output Delta table")
    parser.add_argument("--checkpoint", required=True)
    stop = parser.add_mutually_exclusive_group(required=True)
    stop.add_argument("--events", type=int, help="input rows to process before stopping")
    stop.add_argument("--events-file", help="instead: a file that will hold that number (a live stream's total, known when it ends)")
    parser.add_argument("--commit-interval-ms", type=int, default=100)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=1_000_000)
    parser.add_argument("--max-files-per-trigger", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=3, help="shuffle partitions (deltastreams' repartition topic has 3)")
    parser.add_argument("--window-ms", type=int, default=5000)
    parser.add_argument("--grace-ms", type=int, default=10_000)
    parser.add_argument("--min-duration-s", type=int, default=30)
    parser.add_argument("--timings", help="write the timings here (JSON)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="another Spark setting")
    args = parser.parse_args(argv)
    if args.source == "kafka" and not args.bootstrap_servers:
        parser.error("--source kafka needs --bootstrap-servers")
    if args.source == "delta" and not args.input:
        parser.error("--source delta needs --input")
    timings: dict = {"session_start": time.time()}
    spark = session(f"pageview-spark-{args.source}", args.partitions, dict(item.split("=", 1) for item in args.conf))
    timings["session_ready"] = time.time()
    try:
        run(spark, args, timings)
    finally:
        timings["stopped"] = time.time()
        if args.timings:
            with open(args.timings, "w") as f:
                json.dump(timings, f)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
