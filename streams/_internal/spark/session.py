"""The SparkSession an application runs on: local by default, whatever spark-submit set up on a
cluster."""

from __future__ import annotations

import os
import sys

from conf import StreamsConfig

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Every sub-topology query is small per batch; Spark's default of 200 shuffle partitions
    # makes streaming aggregations many times slower (project notes).
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "200000",
    "spark.python.worker.reuse": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    # Records stay in Python workers (tasks read their own files); the JVM holds plans and state
    # of Spark's own, so a 2 GiB heap keeps the whole job's footprint well under 4 GiB.
    "spark.driver.memory": "2g",
    # Python workers connecting back to a busy JVM on 2 loaded cores can take longer than the 15 s
    # default; a timeout there kills the query.
    "spark.python.authenticate.socketTimeout": "120s",
    # Python workers over a Unix socket: the JVM's small writes to them over TCP waited for delayed
    # ACKs (~40 ms each, seen with strace); a 2-task job took ~100 ms instead of ~140 ms.
    "spark.python.unix.domain.socket.enabled": "true",
}


def spark_session(config: StreamsConfig):
    """Get or create the session. Under spark-submit the master comes from there; embedded, from
    ``config.master``. Python workers use this interpreter, so they import the project too."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from streams._internal.spark.source import DeltaTopicSource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(f"deltastreams-{config.application_id}")
    submitted = SparkConf()
    if not submitted.contains("spark.master"):
        builder = builder.master(config.master)
    for key, value in {**_DEFAULTS, **dict(config.spark_conf)}.items():
        if not submitted.contains(key):
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(DeltaTopicSource)
    return spark
