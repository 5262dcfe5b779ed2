"""Named points in the commit protocol where a test can make the driver die with SIGKILL.

``DELTASTREAMS_CRASH_AT=<point>[@<n>]`` (comma-separated for several) kills the process the
``n``-th time (default: the first) it reaches ``<point>``. Unset, this is a dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter

from deltastreams.sinks.kafka_publisher import KILL_POINTS as KAFKA_TRANSACTION_POINTS
from deltastreams.sinks.retention import KILL_POINTS as RETENTION_POINTS

COMMIT_POINTS = ("after_data_files", "after_consolidate", "after_commit", "during_publication", "before_spark_commit")
POINTS = COMMIT_POINTS + RETENTION_POINTS
"""The commit protocol's points (docs/exactly-once.md), then those inside retention steps
(docs/retention.md)."""
KAFKA_SINK_POINTS = ("before_kafka_publish", *KAFKA_TRANSACTION_POINTS)
"""With topics mirrored to Kafka (reached only then, so not in :data:`POINTS`): after a batch is
decided and published under the root, before its Kafka transaction; then inside that transaction
(:data:`deltastreams.sinks.kafka_publisher.KILL_POINTS`)."""
RESCALE_POINTS = (
    "rescale_after_recover",
    "rescale_after_staging",
    "rescale_after_plan",
    "rescale_during_switch",
    "rescale_before_decide",
    "rescale_after_switch",
)
"""Inside ``python -m deltastreams.jobs.rescale`` (:mod:`deltastreams.streams.rescale`), in the order it reaches them; not
in :data:`POINTS`, which an application run reaches."""
RESET_POINTS = ("reset_after_fence", "reset_after_plan", "reset_during_decide", "reset_after_decide", "reset_during_delete", "reset_before_unplan")
"""Inside ``python -m deltastreams.jobs.reset`` (:mod:`deltastreams.streams.reset`), in the order it reaches them."""
SKIP_POINTS = ("skip_after_fence", "skip_after_decide")
"""Inside ``python -m deltastreams.jobs.skip`` (:mod:`deltastreams.streams.skip`), in the order it reaches them."""
_KNOWN = POINTS + KAFKA_SINK_POINTS + RESCALE_POINTS + RESET_POINTS + SKIP_POINTS
_reached: Counter[str] = Counter()


def _armed() -> dict[str, int]:
    armed = {}
    for item in filter(None, os.environ.get("DELTASTREAMS_CRASH_AT", "").split(",")):
        point, _, nth = item.partition("@")
        if point not in _KNOWN:
            raise ValueError(f"unknown crash point {point!r}; known points: {', '.join(_KNOWN)}")
        armed[point] = int(nth or 1)
    return armed


_ARMED = _armed()


def crash_point(point: str) -> None:
    if not _ARMED:
        return
    _reached[point] += 1
    if _ARMED.get(point) == _reached[point]:
        print(f"deltastreams: crash point {point} reached, killing the driver (pid {os.getpid()})", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
