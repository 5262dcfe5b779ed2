"""The Spark runtime's entry points for tools (benchmarks, the crash harness).

``spark_session(config)`` is the session ``StreamsApp`` starts when none is given;
``CRASH_POINTS`` names the points of the commit protocol (``COMMIT_CRASH_POINTS``) and of the
retention steps where ``DELTASTREAMS_CRASH_AT`` makes the driver kill itself, and
``KAFKA_SINK_CRASH_POINTS`` those of the Kafka sink, reached only with topics mirrored to Kafka
(see docs/exactly-once.md), ``RESCALE_CRASH_POINTS`` those of ``python -m deltastreams.jobs.rescale``, ``RESET_CRASH_POINTS`` those of
``python -m deltastreams.jobs.reset``.
"""

from deltastreams.streams._internal.runtime.crashpoints import COMMIT_POINTS as COMMIT_CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import KAFKA_SINK_POINTS as KAFKA_SINK_CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import POINTS as CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import RESCALE_POINTS as RESCALE_CRASH_POINTS
from deltastreams.streams._internal.runtime.crashpoints import RESET_POINTS as RESET_CRASH_POINTS
from deltastreams.streams._internal.spark.session import spark_session

__all__ = ["COMMIT_CRASH_POINTS", "CRASH_POINTS", "KAFKA_SINK_CRASH_POINTS", "RESCALE_CRASH_POINTS", "RESET_CRASH_POINTS", "spark_session"]
