"""Progress of a running application: a log line per micro-batch, a live line on a terminal,
optionally a JSON line per micro-batch in a file for tools (:class:`MetricsFile`), and Spark's own
view through a StreamingQueryListener."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable

log = logging.getLogger("deltastreams")


class MetricsFile:
    """Appends one JSON line per committed micro-batch to a file: ``time`` (epoch s, batch end),
    ``subtopology``, ``batch_id``, ``tasks``, the record counts, ``total_ms``, ``process_ms``,
    ``commit_ms``, ``phases`` (driver side) and ``task_phases`` (summed over tasks), in ms; on a
    cluster also ``task_locations`` (partition -> executor), ``task_restored_entries`` (partition ->
    changelog entries read back) and ``standby_entries`` (applied by standby copies).

    The file is opened per line, in append mode, so it may be moved away while the job runs; a
    reader following a live job keeps only lines that end in a newline."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, metrics) -> None:
        line = {
            "time": round(metrics.started_at + metrics.total_seconds, 3),
            "subtopology": metrics.subtopology,
            "batch_id": metrics.batch_id,
            "tasks": metrics.tasks,
            "records_in": metrics.records_in,
            "records_out": metrics.records_out,
            "dropped_late": metrics.dropped_late,
            "dead_letters": metrics.dead_letters,
            "restored_entries": metrics.restored_entries,
            "total_ms": _ms(metrics.total_seconds),
            "process_ms": _ms(metrics.process_seconds),
            "commit_ms": _ms(metrics.commit_seconds),
            "phases": {name: _ms(seconds) for name, seconds in metrics.phases.items()},
            "task_phases": {name: _ms(seconds) for name, seconds in metrics.task_phases.items()},
        }
        if metrics.task_locations:  # a cluster: where each task ran, what moving cost it
            line["task_locations"] = metrics.task_locations
            line["task_restored_entries"] = metrics.task_restored_entries
            line["standby_entries"] = metrics.standby_entries
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


class Progress:
    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.interactive = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.totals = {"records_in": 0, "records_out": 0, "dropped_late": 0, "dead_letters": 0, "batches": 0}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[object], None]] = []

    def write_metrics_to(self, path: str) -> None:
        """Also append every committed micro-batch's metrics to ``path`` (see :class:`MetricsFile`)."""
        self.on_batch(MetricsFile(path).write)

    def on_batch(self, listener: Callable[[object], None]) -> None:
        """Also call ``listener`` with every committed micro-batch's metrics (the metrics file, the
        metrics endpoint), one call at a time."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[object], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def batch_done(self, metrics) -> None:
        log.info("%s", metrics.line())
        log.debug("%s", metrics.profile())
        with self._lock:
            self.totals["records_in"] += metrics.records_in
            self.totals["records_out"] += metrics.records_out
            self.totals["dropped_late"] += metrics.dropped_late
            self.totals["dead_letters"] += metrics.dead_letters
            self.totals["batches"] += 1
            for listener in self._listeners:  # under the lock: sub-topologies commit from their own threads
                listener(metrics)
            if self.interactive:
                t = self.totals
                self.stream.write(
                    f"\r\x1b[K{t['batches']} batches | {t['records_in']:,} in | {t['records_out']:,} out | "
                    f"{t['dropped_late']:,} late | {t['dead_letters']:,} DLQ | last: {metrics.line()[:60]}"
                )
                self.stream.flush()

    def summary(self) -> str:
        """What the application processed: ``processed N records in B batches; L late dropped, D to the DLQ``."""
        t = self.totals
        return f"processed {t['records_in']:,} records in {t['batches']} batches; {t['dropped_late']:,} late dropped, {t['dead_letters']:,} to the DLQ"

    def finish(self) -> None:
        if self.interactive:
            self.stream.write("\n")
