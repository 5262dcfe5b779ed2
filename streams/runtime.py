"""The Spark runtime's entry points for tools (benchmarks, the crash harness).

``spark_session(config)`` is the session ``StreamsApp`` starts when none is given;
``CRASH_POINTS`` names the points of the commit protocol (``COMMIT_CRASH_POINTS``) and of the
retention steps where ``DELTASTREAMS_CRASH_AT`` makes the driver kill itself, and
``KAFKA_SINK_CRASH_POINTS`` those of the Kafka sink, reached only with topics mirrored to Kafka
(see docs/exactly-once.md), ``RESCALE_CRASH_POINTS`` those of ``python -m deltastreams.jobs.rescale``, ``RESET_CRASH_POINTS`` those of
``python -m deltastreams.jobs.reset``. ``CLASS_ARCHIVE`` is where the embedded session's class-data-sharing
archive goes (written by ``python -m deltastreams.jobs.class_archive``, from bin/setup), with its key.
"""

from deltastreams.streams._internal.runtime.crashpoints import COMMIT_POINTS as COMMIT_CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import KAFKA_SINK_POINTS as KAFKA_SINK_CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import POINTS as CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import RESCALE_POINTS as RESCALE_CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import RESET_POINTS as RESET_CRASH_POINTS
from deltastreams.streams._internal.spark.class_archive import ARCHIVE as CLASS_ARCHIVE
from deltastreams.streams._internal.spark.class_archive import KEY as CLASS_ARCHIVE_KEY
from deltastreams.streams._internal.spark.class_archive import current as class_archive_current
from deltastreams.streams._internal.spark.class_archive import key as class_archive_key
from deltastreams.streams._internal.spark.session import spark_session

__all__ = [
    "CLASS_ARCHIVE", "CLASS_ARCHIVE_KEY", "COMMIT_CRASH_POINTS", "CRASH_POINTS", "KAFKA_SINK_CRASH_POINTS", "RESCALE_CRASH_POINTS", "RESET_CRASH_POINTS",
    "class_archive_current", "class_archive_key", "spark_session",
]  # fmt: skip
