"""Spark's own view of the application's query, in the log: a StreamingQueryListener."""

from __future__ import annotations

import json
import logging

log = logging.getLogger("deltastreams")


def query_listener():
    """A StreamingQueryListener logging Spark's per-batch progress (durations, input rows)."""
    from pyspark.sql.streaming import StreamingQueryListener

    class DeltaStreamsListener(StreamingQueryListener):
        terminated: set[str] = set()

        def onQueryStarted(self, event) -> None:
            log.info("query %s started", event.name)

        def onQueryProgress(self, event) -> None:
            progress = event.progress
            log.debug(
                "query %s batch %s: %s input rows, durations %s",
                progress.name, progress.batchId, progress.numInputRows, json.dumps(progress.durationMs),
            )

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            self.terminated.add(str(event.id))
            if event.exception:
                log.debug("query %s failed: %s", event.id, event.exception)

    return DeltaStreamsListener()
