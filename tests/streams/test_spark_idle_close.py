"""Idle close on real Spark and Delta tables: once the input goes quiet, the last windows' final
results appear without a new record, each once, and an idle application then commits nothing."""

from __future__ import annotations

import time
from collections import Counter

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import EmitStrategy, StreamsBuilder, TimeWindows
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark

SIZE, IDLE = 1000, 1500


def final_counts(root):
    out = Topic.open(root, "final-counts").read() if Topic.exists(root, "final-counts") else None
    if out is None:
        return []
    return list(zip(*(out[c].to_pylist() for c in ("key", "window_start", "value")), strict=True))


def test_the_last_windows_final_results_appear_without_new_input(spark, tmp_path):
    root = str(tmp_path)
    create_topic(root, "clicks", partitions=2, key_type=pa.string(), value_type=pa.string())
    builder = StreamsBuilder()
    (builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size(SIZE).grace(0))
     .emit_strategy(EmitStrategy.on_window_close()).count(name="clicks-per-second").to_stream().to("final-counts"))
    config = StreamsConfig.load({"application_id": "idle", "root": root, "commit_interval_ms": 100, "idle_close_ms": IDLE})
    rows = [(f"u{i % 5}", 200 + 7 * i) for i in range(400)]  # event time 200..2993: windows 0, 1000, 2000
    Topic.open(root, "clicks").append(pa.table({"key": [k for k, _ in rows], "value": ["c"] * len(rows), "timestamp": pa.array([t for _, t in rows], pa.int64())}))
    expected = Counter((key, ts // SIZE * SIZE) for key, ts in rows)
    app = StreamsApp(builder.build(), config, spark=spark)
    app.start()
    try:
        deadline = time.monotonic() + 180
        while not app.caught_up({"clicks": 1}) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert app.caught_up({"clicks": 1})
        # Records closed [0, 1000) and [1000, 2000); only idle close can close [2000, 3000), and
        # not before the tasks have been idle for IDLE ms.
        assert {s for _, s, _ in final_counts(root)} == {0, 1000}
        while {s for _, s, _ in final_counts(root)} != {0, 1000, 2000} and time.monotonic() < deadline:
            time.sleep(0.1)
        results = final_counts(root)
        assert Counter({(k, s): v for k, s, v in results}) == expected
        assert len(results) == len(expected)  # each window once
        time.sleep(0.5)  # a tick sent while the last trigger ran may still start one, which finds nothing
        batches, triggers = len(app.history), app.trigger.last_batch_id
        time.sleep(3 * IDLE / 1000)
        # Nothing open: an idle application commits nothing, and runs no trigger either.
        assert (len(app.history), app.trigger.last_batch_id) == (batches, triggers)
    finally:
        app.stop()
