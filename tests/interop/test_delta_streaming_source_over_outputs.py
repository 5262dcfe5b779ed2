"""Spark's Delta streaming source (delta-spark) over an output topic while the pageview job runs
with every retention step due often: it sees every output record exactly once (optimizes and
compactions are dataChange = false rewrites, purges touch the repartition topic), and the steps
go into the tables' history as Delta's own operations, as delta-spark records them."""

from __future__ import annotations

import json
import threading
import time

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs import pageview
from deltastreams.jobs.pageview_data import VALUE_TYPE
from deltastreams.sinks import Topic
from deltastreams.streams.app import StreamsApp
from tests.interop.conftest import assert_reads_like_us, retention_every

pytestmark = pytest.mark.spark

OFTEN = retention_every(200)


def _history(spark, topic: Topic) -> list:
    return spark.sql(f"DESCRIBE HISTORY delta.`{topic.uri}`").select("operation", "operationParameters", "operationMetrics").collect()


def test_a_delta_stream_over_an_output_sees_every_record_once_through_retention(delta, tmp_path):
    spark, root = delta, str(tmp_path)
    pageview.generate(root, 1_000)
    bad = pa.table({"key": ["u-bad"], "value": pa.array([{"user_id": "u-bad", "page_id": "p", "category": "c", "duration_s": None}], VALUE_TYPE),
                    "timestamp": pa.array([1_700_000_000_000], pa.int64())})
    pageview.input_topic(root).append(bad)  # a null predicate: the dead-letter topic
    config = StreamsConfig.load({"application_id": pageview.APPLICATION_ID, "root": root, "commit_interval_ms": 100, "max_records_per_batch": 500, **OFTEN})
    app = StreamsApp(pageview.build_topology(), config, spark=spark)
    app.run(until_caught_up=True, timeout_s=120)  # the output exists: a stream can start on it
    app = StreamsApp(pageview.build_topology(), config, spark=spark)
    app.start()
    seen = app.topic_frame(pageview.OUTPUT_TOPIC, streaming=True).writeStream.format("memory").queryName("seen_counts").start()
    more = threading.Thread(target=lambda: [pageview.generate(root, 400, seed=s) or time.sleep(0.3) for s in range(1, 9)])
    more.start()
    more.join()
    app.run(until_caught_up=True, timeout_s=180)
    seen.processAllAvailable()
    try:
        output = Topic.open(root, pageview.OUTPUT_TOPIC)
        assert_reads_like_us(spark, spark.table("seen_counts"), output)
    finally:
        seen.stop()
    history = {t: _history(spark, Topic.open(root, t)) for t in (pageview.OUTPUT_TOPIC, *(p.name for p in (tmp_path / "topics").iterdir() if "-" in p.name))}
    operations = {t: {row.operation for row in rows} for t, rows in history.items()}
    optimizes = [row for row in history[pageview.OUTPUT_TOPIC] if row.operation == "OPTIMIZE"]
    assert optimizes, operations  # the stream read through optimizes of the output
    assert json.loads(optimizes[0].operationParameters["predicate"])[0].startswith("(partition IN (")
    assert int(optimizes[0].operationMetrics["numRemovedFiles"]) >= 2
    repartition = next(t for t in operations if t.endswith("-repartition"))
    changelog = next(t for t in operations if t.endswith("-changelog"))
    assert "DELETE" in operations[repartition] and "REORG" in operations[changelog], operations
    for name in history:  # no retention commit is recorded as delta-rs' WRITE any more
        kinds = {}
        for path in sorted((tmp_path / "topics" / name / "_delta_log").glob("*.json")):
            info = json.loads(path.read_text().splitlines()[0])["commitInfo"]
            kind = json.loads(info.get("deltastreams", "{}")).get("kind")
            if kind is not None:
                kinds[kind] = info["operation"]
        assert set(kinds.items()) <= {("purge", "DELETE"), ("compact", "REORG"), ("optimize", "OPTIMIZE")}, (name, kinds)
    # Every topic the job wrote still reads the same with delta-spark's batch reader.
    for name in history:
        topic = Topic.open(root, name)
        assert_reads_like_us(spark, spark.read.format("delta").load(topic.uri), topic)
