"""Session windows on real Spark and Delta tables: with in-order input, the sessions standing at
the end are each key's timestamps cut wherever two are more than the gap apart, counted (a plain
model), whatever the batches; merged-away sessions were deleted on the way; the suppressed
final results are exactly the sessions that closed."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import SessionWindows, StreamsBuilder, Suppressed
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark

GAP, GRACE = 50, 10


def model(rows):
    sessions = {}
    for key in {k for k, _ in rows}:
        stamps = sorted(t for k, t in rows if k == key)
        start = prev = stamps[0]
        count = 0
        for t in stamps:
            if t - prev > GAP:
                sessions[(key, start, prev)] = count
                start, count = t, 0
            prev, count = t, count + 1
        sessions[(key, start, prev)] = count
    return sessions


def test_sessions_standing_at_the_end_match_the_model(spark, tmp_path):
    root, rng = str(tmp_path), random.Random(4)
    create_topic(root, "clicks", partitions=2, key_type=pa.string(), value_type=pa.string())
    builder = StreamsBuilder()
    counts = builder.stream("clicks").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP, GRACE)).count(name="sessions")
    counts.to_stream().to("session-counts")
    counts.suppress(Suppressed.until_window_closes()).to_stream().to("final-sessions")
    config = StreamsConfig.load({"application_id": "sessions", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 60})
    rows, clock = [], 0
    for _ in range(2):
        batch = []
        for _ in range(250):
            clock += rng.choice([0, 1, 3, 8, 20, 70])
            batch.append((f"u{rng.randrange(6)}", clock))
        Topic.open(root, "clicks").append(pa.table({"key": [k for k, _ in batch], "value": ["c"] * len(batch), "timestamp": pa.array([t for _, t in batch], pa.int64())}))
        rows += batch
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    output = Topic.open(root, "session-counts").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = {}
    for key, start, end, value in zip(*(output[c].to_pylist() for c in ("key", "window_start", "window_end", "value")), strict=True):
        latest[(key, start, end)] = value
    assert {k: v for k, v in latest.items() if v is not None} == model(rows)
    # Suppressed: each session once, when its partition's stream time is gap + grace past its end.
    partition_of = dict(zip(output["key"].to_pylist(), output["partition"].to_pylist(), strict=True))
    stream_time = {}
    for key, t in rows:
        stream_time[partition_of[key]] = max(stream_time.get(partition_of[key], -1), t)
    final = Topic.open(root, "final-sessions").read()
    emitted = list(zip(*(final[c].to_pylist() for c in ("key", "window_start", "window_end")), strict=True))
    assert len(emitted) == len(set(emitted))
    closed = {s: c for s, c in model(rows).items() if s[2] <= stream_time[partition_of[s[0]]] - GAP - GRACE}
    assert dict(zip(emitted, final["value"].to_pylist(), strict=True)) == closed and len(closed) > 10
