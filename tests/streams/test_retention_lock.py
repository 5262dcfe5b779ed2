"""Retention's rewrites do not stop the application's triggers: compaction and optimize write
their files without the commit lock (which every trigger's plan and commit take), file cleanup
judges and deletes without it, and so does log cleanup. Held for a whole step, the lock stopped the
triggers 1-3 s once a minute in issue 42's 2-hour soak; held to judge files, 250-430 ms each time
a topic's removed files were judged, in the next one."""

from __future__ import annotations

import time

import pyarrow as pa

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import create_topic
from deltastreams.streams import StreamsApp, StreamsBuilder
from deltastreams.streams._internal.runtime import retention as runtime_retention


def test_retention_prepares_rewrites_judges_and_deletes_files_and_cleans_logs_without_the_commit_lock(spark, tmp_path, monkeypatch):
    held_by_retention: list[str] = []
    calls: list[str] = []
    running: dict[str, StreamsApp] = {}

    def watching(name, real):
        def call(*args, **kwargs):
            # The commit lock is not reentrant: if this thread held it, the acquire would time out.
            lock = running["app"].trigger.commit_lock
            if lock.acquire(timeout=10):
                lock.release()
            else:
                held_by_retention.append(name)
            calls.append(name)
            return real(*args, **kwargs)

        return call

    watched = {"prepare_compaction", "prepare_optimize", "find_unreferenced", "delete_doomed", "clean_log"}
    for name in watched:
        monkeypatch.setattr(runtime_retention, name, watching(name, getattr(runtime_retention, name)))
    builder = StreamsBuilder()
    builder.stream("events").group_by_key().count().to_stream().to("counts")
    events = create_topic(tmp_path, "events", partitions=1, key_type=pa.string(), value_type=pa.int64())
    settings = {
        "application_id": "locks", "root": str(tmp_path), "commit_interval_ms": 100,
        "retention.compaction_interval_ms": 300, "retention.compaction_min_files": 3,
        "retention.optimize_interval_ms": 300, "retention.optimize_min_files": 3, "retention.file_cleanup_interval_ms": 300,
        "retention.removed_file_delay_ms": 0, "retention.log_cleanup_interval_ms": 300,
    }
    app = running["app"] = StreamsApp(builder.build(), StreamsConfig.load(settings), spark=spark)
    app.start()
    try:
        deadline = time.monotonic() + 60
        n = 0
        while time.monotonic() < deadline and not watched <= set(calls):
            events.append(pa.table({"key": [f"k{n % 3}"], "value": pa.array([n], pa.int64()), "timestamp": pa.array([n], pa.int64())}))
            n += 1
            time.sleep(0.15)
    finally:
        app.stop()
    assert watched <= set(calls), calls
    assert held_by_retention == []
