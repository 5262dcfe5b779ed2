"""Retention while the application runs: each step of :mod:`deltastreams.sinks.retention` on the tables this
application writes, at its interval, between commits.

- purge: repartition records every reading sub-topology has committed as consumed (Kafka's
  ``deleteRecords`` after a commit);
- compact: changelogs (last record per key; old tombstones dropped, clean watermarks raised, so
  a store behind a watermark is rebuilt from scratch: :mod:`deltastreams.state.task_stores`);
- optimize (and, if configured, time/size retention): sink topics and the dead-letter topic;
- delete files: unreferenced data files of every table written, once old enough, never a file
  a decided batch lists;
- clean logs: old commit files of those tables (never one a downstream still has to read) and of
  the transaction logs (never the last decided entry).

Steps run on a thread of their own while the next trigger's tasks run, holding the commit lock:
a step and a sub-topology's commit never interleave on a table, so every step commits
exclusively against the version the application last wrote and the registry records what it
committed. Compaction and optimize read and write their files before they take the lock, from a
snapshot at the version last written, and hold it only to commit; file deletion and log cleanup
hold it only to read the version, the decided batches and the positions they judge against, then
judge and delete on a snapshot. Held for the whole step, the lock stopped the application's
triggers for the 1-2 s it takes to rewrite a minute's 1,600 small files (a plan phase of 1-3 s
once a minute in the 2-hour soak of issue 42, the top of its p99 latency); held to judge files,
it stalled plans for 250-430 ms while a topic's 1,200 removed files were judged (a second soak:
p99 latency stepped up by half when deletion began, at minute 11). Every step can be killed at its named points (``DELTASTREAMS_CRASH_AT``) and recovers
by itself: see docs/retention.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from deltastreams.conf.retention import RetentionConfig
from deltastreams.sinks.retention import (
    RetentionResult,
    Step,
    changelog_watermarks,
    clean_log,
    commit_rewrite,
    consumed_offsets,
    delete_doomed,
    find_unreferenced,
    keep_removals,
    expire_oldest,
    prepare_compaction,
    prepare_optimize,
    purge_consumed,
)
from deltastreams.sinks import open_table
from deltastreams.streams._internal.runtime.committer import Committer
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.topology.graph import Topology

log = logging.getLogger("deltastreams")

_COUNTED = ("files_removed", "files_deleted", "bytes_deleted")
"""What :meth:`Retention.totals` adds up per step, from each step's results."""


class Retention(threading.Thread):
    def __init__(self, config: RetentionConfig, topology: Topology, registry: TopicRegistry, committer: Committer, lock: threading.Lock) -> None:
        super().__init__(name="deltastreams-retention", daemon=True)
        self.config = config
        self.registry = registry
        self.committer = committer
        self.lock = lock
        internal = topology.internal_topics
        self.readers = {t: [s.id for s in topology.subtopologies if t in s.source_topics] for t in internal}
        self.changelogs = sorted(registry.changelog_topics)
        self.outputs = sorted({t for s in topology.subtopologies for t in registry.written_by(s)})
        self.sinks = [t for t in self.outputs if t not in internal and t not in registry.changelog_topics]
        self._stopping = threading.Event()
        self._last: dict[str, float] = {}
        self._totals: dict[str, dict[str, int]] = {step.value: dict.fromkeys(_COUNTED, 0) for step in Step}

    def totals(self) -> dict[str, dict[str, int]]:
        """Per step, what it removed since the application started (for the metrics endpoint)."""
        return {step: dict(counts) for step, counts in self._totals.items()}

    def stop(self) -> None:
        """No new step starts; waits for the one running."""
        self._stopping.set()
        if self.is_alive():
            self.join()

    def run(self) -> None:
        steps: list[tuple[str, float, Callable[[], None]]] = [
            ("purge", self.config.purge_interval.total_seconds(), self.purge),
            ("compact", self.config.compaction_interval.total_seconds(), self.compact),
            ("optimize", self.config.optimize_interval.total_seconds(), self.optimize),
            ("files", self.config.file_cleanup_interval.total_seconds(), self.delete_files),
            ("logs", self.config.log_cleanup_interval.total_seconds(), self.clean_logs),
        ]
        started = time.monotonic()
        tick = min(1.0, *(interval for _, interval, _ in steps))
        while not self._stopping.wait(tick):
            for name, interval, step in steps:
                if self._stopping.is_set():
                    return
                if time.monotonic() - self._last.get(name, started) < interval:
                    continue
                self._last[name] = time.monotonic()
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    step()
                except Exception:  # noqa: BLE001 - retention must never stop the application
                    log.warning("retention step %s failed; it runs again next interval", name, exc_info=True)
                # What each step costs the driver beside its triggers (wall time includes waits
                # for the commit lock and for the interpreter's lock the trigger threads hold).
                log.debug("retention step %s took %.0f ms (%.0f ms CPU)", name, (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000)

    # -- the steps ----------------------------------------------------------------------------

    def purge(self) -> None:
        for topic, readers in self.readers.items():
            if not readers or not self.registry.exists(topic):
                continue
            with self.lock:
                consumed = min(self.committer.position(s, topic) for s in readers)
                table = self.registry.delta_table(topic)
                self._record(topic, purge_consumed(table, consumed_offsets(table, consumed), on_step=crash_point))

    def _snapshot(self, topic: str):
        """The topic's table at the version this application last wrote, a private copy to read
        from without the lock."""
        with self.lock:
            version = self.registry.version(topic)
        return open_table(self.registry.uri(topic), version)

    def compact(self) -> None:
        for topic in self.changelogs:
            prepared = prepare_compaction(
                self._snapshot(topic), min_files=self.config.compaction_min_files, tombstone_retention=self.config.tombstone_retention, on_step=crash_point
            )
            with self.lock:
                table = self.registry.delta_table(topic)
                if prepared is not None:
                    result = commit_rewrite(table, prepared, on_step=crash_point)
                    self._record(topic, result)
                    table = self.registry.delta_table(topic)
                self.registry.set_watermarks(topic, changelog_watermarks(table))

    def optimize(self) -> None:
        for topic in self.sinks:
            if not self.registry.exists(topic):
                continue
            prepared = prepare_optimize(
                self._snapshot(topic),
                min_files=self.config.optimize_min_files,
                target_file_bytes=self.config.optimize_target_file_bytes,
                on_step=crash_point,
            )
            if prepared is not None:
                with self.lock:
                    self._record(topic, commit_rewrite(self.registry.delta_table(topic), prepared, on_step=crash_point))
            if self.config.sink_retention is not None or self.config.sink_retention_bytes is not None:
                with self.lock:
                    table = self.registry.delta_table(topic)
                    self._record(
                        topic,
                        expire_oldest(table, retention=self.config.sink_retention, retention_bytes=self.config.sink_retention_bytes, on_step=crash_point),
                    )

    def delete_files(self) -> None:
        for topic in self.outputs:
            if not self.registry.exists(topic):
                continue
            with self.lock:
                committed = keep_removals(self.registry.delta_table(topic), self.config.removed_file_delay, on_step=crash_point)
                if committed is not None:
                    self._record(topic, committed)
                decided = [b for b in self.committer.last.values() if b is not None]
                version = self.registry.version(topic)
            if committed is not None and committed.conflict:
                continue
            found, doomed = find_unreferenced(
                open_table(self.registry.uri(topic), version),
                decided=decided,
                orphan_delay=self.config.orphan_file_delay,
                removed_delay=self.config.removed_file_delay,
                on_step=crash_point,
                behind_ok=True,
            )
            self._record(None, delete_doomed(found, doomed, on_step=crash_point))

    def clean_logs(self) -> None:
        """On snapshots, without the lock: a commit file older than both the versions kept and
        every reader's position is read by nobody, whatever the application commits meanwhile
        (positions only grow, so ones read a moment ago keep more)."""
        for topic in self.outputs:
            if not self.registry.exists(topic):
                continue
            with self.lock:
                readers = self.readers.get(topic, [])
                needed = min(self.committer.position(s, topic) for s in readers) + 1 if readers else None
                version = self.registry.version(topic)
            table = open_table(self.registry.uri(topic), version)
            self._record(topic, clean_log(table, keep_versions=self.config.log_keep_versions, oldest_needed_version=needed, on_step=crash_point))
        for txlog in self.committer.logs.values():
            with self.lock:
                decided = txlog.last_decided_version()  # brings its table up to date first
                version = txlog.table.version()
            table = open_table(txlog.uri, version)
            self._record(None, clean_log(table, keep_versions=self.config.log_keep_versions, oldest_needed_version=decided, on_step=crash_point))

    def _record(self, topic: str | None, result: RetentionResult) -> None:
        counts = self._totals[result.step.value]
        for name in _COUNTED:
            counts[name] += getattr(result, name)
        if topic is not None and result.version is not None:
            self.registry.committed(topic, result.version)
        if result.version is not None or result.files_deleted or result.conflict:
            log.info("retention: %s", result.describe())
