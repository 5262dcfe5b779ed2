"""The SparkSession an application runs on: local by default, whatever spark-submit set up on a
cluster."""

from __future__ import annotations

import os
import shlex
import sys

from deltastreams.conf import DeltaSpark, StreamsConfig
from deltastreams.streams._internal.spark import class_archive, delta_spark
from deltastreams.streams._internal.spark.spark_log import launch_jvm_writing_to, running_jvm_writing_to

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Every sub-topology query is small per batch; Spark's default of 200 shuffle partitions
    # makes streaming aggregations many times slower.
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
    # PySpark's daemon, without the BrokenPipeError tracebacks every run's end printed.
    "spark.python.daemon.module": "deltastreams.streams._internal.spark.quiet_daemon",
    # The query's checkpoint is local scratch (a fresh one per instance; progress lives in the
    # transaction logs). Spark's default manager writes each offset and commit log entry through
    # Hadoop's FileContext, ~50 ms apiece here (idle machine, even on tmpfs); FileSystem's rename
    # takes ~12 ms: 75 ms less per trigger.
    "spark.sql.streaming.checkpointFileManagerClass": "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
}


def submitted_settings() -> dict[str, str]:
    """The Spark settings somebody gave before us, which ours must not override: those of
    spark-submit (``--master``, ``--conf``, spark-defaults.conf), of a session that already runs,
    or of ``PYSPARK_SUBMIT_ARGS``.

    A fresh ``SparkConf()`` cannot tell: before a SparkContext exists it does not look at the JVM,
    so spark-submit's ``--master`` looked unset and the job silently ran in local mode. Under
    spark-submit the JVM is already up (``PYSPARK_GATEWAY_PORT``) and holds what was submitted as
    system properties; attaching to it first lets ``SparkConf()`` read them."""
    from pyspark import SparkConf, SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        return dict(active.getConf().getAll())
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        SparkContext._ensure_initialized()
        return dict(SparkConf().getAll())
    return _submit_args_settings(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))


_SUBMIT_FLAGS = {
    "--master": "spark.master",
    "--name": "spark.app.name",
    "--driver-memory": "spark.driver.memory",
    "--executor-memory": "spark.executor.memory",
    "--executor-cores": "spark.executor.cores",
    "--total-executor-cores": "spark.cores.max",
    "--num-executors": "spark.executor.instances",
}


def _submit_args_settings(arguments: str) -> dict[str, str]:
    """Settings in ``PYSPARK_SUBMIT_ARGS`` (spark-submit's flags, which pyspark hands to the JVM it
    starts): ``--master``, ``--conf k=v`` and the flags that stand for a setting."""
    words = shlex.split(arguments)
    settings = {}
    for flag, value in zip(words, words[1:]):
        if flag == "--conf" and "=" in value:
            key, _, setting = value.partition("=")
            settings[key] = setting
        elif flag in _SUBMIT_FLAGS:
            settings[_SUBMIT_FLAGS[flag]] = value
    return settings


# HotSpot's optimizing compiler (C2) off: the JVM an embedded session starts runs Spark's control
# plane (records stay in Python task hosts), and C2 compiling it took ~20% of a 5M-event pageview
# run's CPU on 2 cores. With C1 alone, alternating runs from launch to done: 5M events from Delta
# 18.9-19.7 s -> 14.8-16.7 s (CPU 34-35 -> 25-28 s), from Kafka 22.9-23.4 -> 17.8-18.1 s; at
# 20,000 events/s and 100 ms the trigger took no longer (median 158 ms with C2, 147 with C1).
# C1 alone makes HotSpot reserve a code cache of 48 MB instead of tiered's 240: a test worker's JVM
# filled it in 400 s of many queries, compiling stopped, and a query then failed linking a method
# handle (NoSuchMethodException: linkToStatic). The reservation is address space; pages are used
# only as code is compiled.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


def driver_java_options(configured: str) -> str:
    """The options of a driver JVM this process starts (the embedded session's; with a cluster's
    master, a driver that only schedules too): the class archive (when it is current) and
    :data:`QUICK_JIT`, then the application's own (``spark_conf``), which win where they set the
    same flag (HotSpot takes a flag's last value). Executors keep Spark's defaults."""
    return " ".join(o for o in (class_archive.java_options(), QUICK_JIT, configured) if o)


def spark_session(config: StreamsConfig, *, log_file: str | None = None):
    """Get or create the session. What spark-submit (or a running session) set wins; our defaults
    and ``config`` fill only what nobody set, so embedded the master is ``config.master``
    (``local[2]``). Python workers use this interpreter, so they import the project too.

    With ``log_file``, Spark's own output (its log, its Python workers' stderr) goes there
    instead of the terminal: :mod:`deltastreams.streams._internal.spark.spark_log`."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from deltastreams.streams._internal.spark.source import DeltaTopicSource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    submitted = submitted_settings()
    ours = {"spark.master": config.master, "spark.app.name": f"deltastreams-{config.application_id}", **_DEFAULTS, **dict(config.spark_conf)}
    if SparkContext._jvm is None and "spark.driver.extraJavaOptions" not in submitted:  # the JVM starts now, ours
        ours["spark.driver.extraJavaOptions"] = driver_java_options(ours.get("spark.driver.extraJavaOptions", ""))
    builder = SparkSession.builder
    for key, value in ours.items():
        if key not in submitted:
            builder = builder.config(key, value)
    # Built from what was submitted (and spark_conf), so it may extend those settings.
    settings = delta_spark.session_settings(config.delta_spark, {**dict(config.spark_conf), **submitted}, running_jvm=SparkContext._jvm)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if log_file is None:
        spark = builder.getOrCreate()
    elif SparkContext._jvm is None:  # the JVM starts now, as our child
        launch_jvm_writing_to(log_file, {**{k: v for k, v in ours.items() if k not in submitted}, **settings})
        spark = builder.getOrCreate()
    else:
        running_jvm_writing_to(SparkContext._jvm, log_file)
        spark = builder.getOrCreate()
        running_jvm_writing_to(SparkContext._jvm, log_file)  # in case creating the context reconfigured log4j
    if config.delta_spark is DeltaSpark.ON:
        delta_spark.require(spark)  # a session that was running already may lack it
    spark.sparkContext.setLogLevel("WARN")
    _quiet_expected_warnings(spark)
    spark.dataSource.register(DeltaTopicSource)
    return spark


def embedded_master(config: StreamsConfig) -> str | None:
    """The local master of the JVM :func:`spark_session` will start as this process's child (the
    embedded default), or None: under spark-submit (whose JVM runs us), with a session already in
    this process, or with a cluster's master."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None or SparkContext._jvm is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    master = _submit_args_settings(os.environ.get("PYSPARK_SUBMIT_ARGS", "")).get("spark.master") or dict(config.spark_conf).get("spark.master") or config.master
    return master if master.startswith("local") else None


def _quiet_expected_warnings(spark) -> None:
    """Two WARNs of Spark's that are never news here, silenced (other errors of their loggers still show):
    - stopping a query (the application's end, or a restart) interrupts the checkpoint write it
      may be in, and Hadoop's local filesystem logs that with a 60-line Java stack trace; our
      Spark checkpoints are disposable (progress lives in the transaction logs);
    - the query's processing-time interval is only how often it looks for ticks (the trigger
      keeps the commit interval itself), so "Current batch is falling behind" would be logged for
      nearly every trigger."""
    jvm = spark.sparkContext._jvm
    try:
        error = jvm.org.apache.logging.log4j.Level.ERROR
        for logger in ("org.apache.hadoop.util.Shell", "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor"):
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(logger, error)
    except Exception:  # another logging backend (a cluster's own log4j setup): keep its output as configured
        pass
