"""Reading one Kafka partition's exact offset range, read_committed, into record form: records/s
per partition (wall) and per CPU-second (this process, its JVM and Spark's Python workers), for each
way of reading it, alternating: the CPU figure says more than the wall time on a loaded machine.

    python -m deltastreams.devtools.bench.kafka_read --events 1000000 [--reps 3] [--bootstrap HOST:PORT]

- ``wire``: what tasks do (:func:`deltastreams.sinks.kafka.read_range`): the range fetched over
  Kafka's protocol (``sinks/_internal/kafka_wire.py``), its record batches decoded in C
  (``sinks/_internal/kafka_range.c``) into Arrow buffers, values by the JSON parser in C;
- ``c-reader``: what tasks do where the wire reader cannot (``read_range(..., reader="librdkafka")``):
  the reader in C polling librdkafka into the same buffers, no Python object per record;
- ``confluent``: what tasks did before it (``read_range(..., reader="python")``, still the path
  where the C reader is not built): librdkafka's batch ``consume()``, one Message object per
  record;
- ``spark-connector``: Spark's own Kafka connector (``jvm/spark/target/lib``, built by bin/setup)
  reading the range in the JVM (``startingOffsets``/``endingOffsets``,
  ``kafka.isolation.level=read_committed``) and handing Arrow batches to a Python function
  (``mapInArrow``), as a records-mode task would get them.
  Without the headers column: Spark 4.2 sizes an Arrow batch row by row, and with a list column
  that made a 300,000-record range take minutes.
Without ``--bootstrap`` a broker is started and the pageview events produced to it (2 partitions).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import pyarrow as pa

from deltastreams.devtools.servers.process_tree import job_processes
from deltastreams.jobs.pageview import INPUT_TOPIC, generate_to_kafka, kafka_input_topic
from deltastreams.sinks.kafka import c_reader_available, read_range, watermarks


def _wire(bootstrap: str, end: int) -> int:
    return read_range(kafka_input_topic(bootstrap), 0, 0, end).num_rows


def _c_reader(bootstrap: str, end: int) -> int:
    return read_range(kafka_input_topic(bootstrap), 0, 0, end, reader="librdkafka").num_rows


def _confluent(bootstrap: str, end: int) -> int:
    return read_range(kafka_input_topic(bootstrap), 0, 0, end, reader="python").num_rows


def _count(batches):
    yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})


def _spark_connector(spark, bootstrap: str, end: int) -> int:
    frame = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("assign", json.dumps({INPUT_TOPIC: [0]}))
        .option("startingOffsets", json.dumps({INPUT_TOPIC: {"0": 0}})).option("endingOffsets", json.dumps({INPUT_TOPIC: {"0": end}}))
        .option("kafka.isolation.level", "read_committed").load()
        .selectExpr("partition", "offset", "cast(unix_millis(timestamp) as long) as timestamp", "key", "value")
    )  # fmt: skip
    return sum(row.n for row in frame.mapInArrow(_count, "n long").collect())


def _tree_cpu_seconds(root_pid: int) -> float:
    """CPU time of ``root_pid`` and its processes (the JVM, Spark's Python daemon and workers)."""
    return sum(p.cpu_s for p in job_processes(root_pid))


def _cpu(spark) -> float:
    """CPU seconds of this process, plus the JVM's tree (not this process's child in the
    ``time.process_time`` sense, so counted apart)."""
    return time.process_time() + _tree_cpu_seconds(spark.sparkContext._gateway.proc.pid)


def _session():
    from deltastreams.conf import StreamsConfig
    from deltastreams.devtools.servers.jvm import spark_jars
    from deltastreams.streams.runtime import spark_session

    connector = [j for j in spark_jars() if os.path.basename(j).startswith(("spark-sql-kafka", "spark-token-provider-kafka", "kafka-clients", "commons-pool2"))]
    if len(connector) < 4:
        raise SystemExit("Spark's Kafka connector is not built: run bin/setup")
    config = StreamsConfig.load({"application_id": "bench-kafka-read", "delta_spark": "off", "spark_conf": {"spark.jars": ",".join(connector)}})
    return spark_session(config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="produced when the broker is started here")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--bootstrap", default=None, help="a broker whose pageview-events topic is filled already")
    args = parser.parse_args(argv)
    broker = None
    if args.bootstrap is None:
        from deltastreams.devtools.servers.kafka_broker import KafkaBroker

        broker = KafkaBroker.start()
        args.bootstrap = broker.bootstrap_servers
        generate_to_kafka(args.bootstrap, args.events, seed=1)
    try:
        end = watermarks(kafka_input_topic(args.bootstrap), [0])[0][1]
        spark = _session()
        if not c_reader_available():
            raise SystemExit("the Kafka reader in C is not built: run bin/setup (it needs gcc)")
        readers = {"wire": lambda: _wire(args.bootstrap, end), "c-reader": lambda: _c_reader(args.bootstrap, end), "confluent": lambda: _confluent(args.bootstrap, end), "spark-connector": lambda: _spark_connector(spark, args.bootstrap, end)}
        _spark_connector(spark, args.bootstrap, min(end, 1000))  # the connector's classes loaded, its Python worker up
        print(f"partition 0, offsets [0, {end:,}), read_committed", flush=True)
        best: dict[str, float] = {}
        for rep in range(args.reps):
            for name in readers if rep % 2 == 0 else reversed(list(readers)):
                load = os.getloadavg()[0]
                wall, cpu = time.perf_counter(), _cpu(spark)
                rows = readers[name]()
                wall, cpu = time.perf_counter() - wall, _cpu(spark) - cpu
                best[name] = max(best.get(name, 0.0), rows / wall)
                print(f"  {name:16} load {load:4.1f}: {rows:,} records in {wall:.2f} s = {rows / wall:,.0f}/s per partition, {rows / cpu:,.0f} per CPU-second (this process, the JVM and its Python workers)", flush=True)
        print("best records/s per partition: " + ", ".join(f"{name} {rate:,.0f}" for name, rate in best.items()))
        print(f"wire / confluent: {best['wire'] / best['confluent']:.1f}x, c-reader / confluent: {best['c-reader'] / best['confluent']:.1f}x")
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
