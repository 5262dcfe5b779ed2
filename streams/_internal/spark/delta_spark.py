"""delta-spark in the application's Spark session: where its jars are and the settings that load
them (``delta_spark = auto | on | off``).

The application never needs it (tasks read and write topics through delta-rs); it is there for
Spark code sharing the session: ``format("delta")`` reads and writes of topics, Delta's streaming
source over output topics (:mod:`deltastreams.streams.spark`). Its jars are not a Python package: bin/setup
builds them from ``jvm/spark/pom.xml`` into ``jvm/spark/target/lib``; on a cluster, give
delta-spark to spark-submit (``--packages io.delta:delta-spark_4.2_2.13:4.4.0`` and the two
settings below) and the application uses what it was given.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from deltastreams.conf import DeltaSpark
from deltastreams.conf.errors import ConfigError

JARS_DIR = Path(__file__).resolve().parents[3] / "jvm" / "spark" / "target" / "lib"
EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_SOURCE_CLASS = "org.apache.spark.sql.delta.sources.DeltaDataSource"
log = logging.getLogger("deltastreams.spark")


def jars() -> list[str]:
    """delta-spark and what it needs beyond the pyspark wheel, if bin/setup built them."""
    return sorted(str(p) for p in JARS_DIR.glob("*.jar"))


def given(settings: Mapping[str, str]) -> bool:
    """Somebody (spark-submit, a running session) already set delta-spark up."""
    return EXTENSION in settings.get("spark.sql.extensions", "")


def session_settings(mode: DeltaSpark, submitted: Mapping[str, str], *, running_jvm=None) -> dict[str, str]:
    """What the session needs for delta-spark under ``mode``, on top of ``submitted`` (which keeps
    winning: jars given there come first, our extension joins theirs).

    ``running_jvm``: the driver JVM when it runs already (spark-submit's, or an earlier session's
    in this process). Jars named now reach the executors but never that JVM's own class loader, so
    delta-spark is there only if its classes already are (``--packages``, ``--jars``); ``auto``
    then means off without them, rather than a session that logs a ClassNotFoundException."""
    if mode is DeltaSpark.OFF or given(submitted):
        return {}
    if running_jvm is not None:
        if not loadable(running_jvm):
            if mode is DeltaSpark.ON:
                raise ConfigError(
                    "delta_spark = on, but the Spark driver was started without delta-spark's classes: give it to spark-submit "
                    "(--packages io.delta:delta-spark_4.2_2.13:4.4.0), or set delta_spark = auto or off",
                    setting="delta_spark",
                )
            log.debug("delta-spark is not on the running driver's classpath: the session goes without it (delta_spark = auto)")
            return {}
        return _extension_settings(submitted)
    found = jars()
    if not found:
        if mode is DeltaSpark.ON:
            raise ConfigError(
                f"delta_spark = on, but delta-spark's jars are not built ({JARS_DIR} is empty): run bin/setup (it builds "
                "jvm/spark/pom.xml with Maven), give delta-spark to spark-submit, or set delta_spark = auto or off",
                setting="delta_spark",
            )
        return {}
    return {"spark.jars": ",".join(j for j in (submitted.get("spark.jars", ""), *found) if j), **_extension_settings(submitted)}


def _extension_settings(submitted: Mapping[str, str]) -> dict[str, str]:
    extensions = ",".join(e for e in (submitted.get("spark.sql.extensions", ""), EXTENSION) if e)
    return {
        "spark.sql.extensions": extensions,
        "spark.sql.catalog.spark_catalog": submitted.get("spark.sql.catalog.spark_catalog", CATALOG),
        # Delta rebuilds a snapshot's state in this many shuffle partitions (50 by default):
        # ~50 tiny tasks per new snapshot of a small topic on a 2-core machine.
        "spark.databricks.delta.snapshotPartitions": submitted.get("spark.databricks.delta.snapshotPartitions", "4"),
    }


def loadable(jvm) -> bool:
    """delta-spark's classes are on the class path of the running JVM ``jvm``."""
    try:
        return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(EXTENSION))
    except Exception:  # noqa: BLE001 - py4j wraps whatever the JVM says: not usable
        return False


def available(spark) -> bool:
    """The session can read and write ``format("delta")``."""
    try:
        spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(_SOURCE_CLASS)
    except Exception:  # noqa: BLE001 - py4j wraps the JVM's ClassNotFoundException
        return False
    return True


def require(spark) -> None:
    if not available(spark):
        raise ConfigError(
            "this Spark session has no delta-spark: start it with delta_spark = auto or on (the jars come from bin/setup), "
            "or give delta-spark to spark-submit (--packages io.delta:delta-spark_4.2_2.13:4.4.0)",
            setting="delta_spark",
        )
