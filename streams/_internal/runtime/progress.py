"""Progress of a running application: a log line per micro-batch, a live line on a terminal, and
Spark's own view through a StreamingQueryListener."""

from __future__ import annotations

import json
import logging
import sys
import threading

log = logging.getLogger("deltastreams")


class Progress:
    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.interactive = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.totals = {"records_in": 0, "records_out": 0, "dropped_late": 0, "dead_letters": 0, "batches": 0}
        self._lock = threading.Lock()

    def batch_done(self, metrics) -> None:
        log.info("%s", metrics.line())
        log.debug("%s", metrics.profile())
        with self._lock:
            self.totals["records_in"] += metrics.records_in
            self.totals["records_out"] += metrics.records_out
            self.totals["dropped_late"] += metrics.dropped_late
            self.totals["dead_letters"] += metrics.dead_letters
            self.totals["batches"] += 1
            if self.interactive:
                t = self.totals
                self.stream.write(
                    f"\r\x1b[K{t['batches']} batches | {t['records_in']:,} in | {t['records_out']:,} out | "
                    f"{t['dropped_late']:,} late | {t['dead_letters']:,} DLQ | last: {metrics.line()[:60]}"
                )
                self.stream.flush()

    def finish(self) -> None:
        if self.interactive:
            self.stream.write("\n")


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
