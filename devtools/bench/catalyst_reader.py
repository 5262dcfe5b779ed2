"""How a sub-topology's Catalyst prefix gets an input topic's records into Spark: this project's
Python data source (tasks read the files with pyarrow, one Spark partition per topic partition,
in offset order) against delta-spark's reader (the JVM reads the files; a range repartition and a
sort give the processing core the same one-partition-per-topic-partition, offset order). Both run
the pageview filter as Catalyst and hand the records to a Python function, as the core's task does.

    python -m deltastreams.devtools.bench.catalyst_reader --root /tmp/prefix --events 1000000 --reps 6
"""

from __future__ import annotations

import argparse
import json
import time

import pyarrow as pa


def _consume(batches):
    yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})


def main(argv: list[str] | None = None) -> int:
    from pyspark.sql import functions as F

    from deltastreams.conf import StreamsConfig
    from deltastreams.jobs import pageview
    from deltastreams.sinks import Topic
    from deltastreams.streams.runtime import spark_session

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="a local root (created with the events if missing)")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=6)
    args = parser.parse_args(argv)
    if not Topic.exists(args.root, pageview.INPUT_TOPIC):
        pageview.generate(args.root, args.events, batches=4)
    spark = spark_session(StreamsConfig.load({"application_id": "bench-catalyst-reader", "delta_spark": "on"}))
    topic = Topic.open(args.root, pageview.INPUT_TOPIC)
    files = topic.files()
    slices = [[p, [[f.path, f.partition, f.num_records, f.min_offset, f.max_offset] for f in files if f.partition == p]] for p in range(topic.partitions)]

    def python_source():
        frame = spark.read.format("deltastreams").option("uri", topic.uri).option("slices", json.dumps(slices)).load()
        return frame.filter(F.col("value.duration_s") >= 30).select("partition", "offset", "timestamp", F.col("value.category").alias("key"), "value")

    def delta_spark():
        frame = spark.read.format("delta").load(topic.uri).filter(F.col("duration_s") >= 30)
        frame = frame.select("partition", "offset", "timestamp", F.col("category").alias("key"), F.struct("user_id", "page_id", "category", "duration_s").alias("value"))
        return frame.repartitionByRange(topic.partitions, "partition").sortWithinPartitions("offset")

    times: dict[str, list[float]] = {"python-source": [], "delta-spark": []}
    for _ in range(args.reps):
        for name, make in (("python-source", python_source), ("delta-spark", delta_spark)):
            started = time.perf_counter()
            rows = sum(r.n for r in make().mapInArrow(_consume, "n long").collect())
            times[name].append(time.perf_counter() - started)
            print(f"{name}: {rows:,} records after the filter in {times[name][-1]:.2f} s", flush=True)
    for name, runs in times.items():
        print(f"{name}: best {min(runs):.2f} s, median {sorted(runs)[len(runs) // 2]:.2f} s over {len(runs)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
