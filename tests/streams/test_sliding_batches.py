"""Sliding windows: the same records whether a task commits every record or many per batch (with
restarts), and every window standing at the end counts exactly the key's records within it (a
plain model; input disorder stays within the grace period, so nothing is late); on Spark too."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import EmitStrategy, SlidingWindows, StreamsBuilder, TopologyTestDriver
from deltastreams.streams.app import StreamsApp

DIFFERENCE, GRACE = 40, 60


def build(final=False, both=False):
    """Every revision to "out", or (``final``) each closed window once; ``both``: the two, the
    final results to "out-final"."""
    builder = StreamsBuilder()
    windowed = builder.stream("clicks").group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(DIFFERENCE, GRACE))
    windowed_final = windowed.emit_strategy(EmitStrategy.on_window_close())
    (windowed_final if final else windowed).count(name="sliding").to_stream().to("out")
    if both:
        windowed_final.count(name="sliding-final").to_stream().to("out-final")
    return builder.build()


def workload(seed, n=300):
    rng = random.Random(seed)
    records, clock = [], 0
    for _ in range(n):
        clock += rng.randrange(0, 15)
        records.append((f"k{rng.randrange(3)}", "c", max(0, clock - rng.randrange(0, 50))))
    return records


def check_against_model(latest, records):
    for (key, start, end), count in latest.items():
        assert end - start == DIFFERENCE
        assert count == sum(1 for k, _, t in records if k == key and start <= t <= end), (key, start, end)
    assert len(latest) > 30


@pytest.mark.parametrize("final", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_batches_and_restarts_do_not_change_the_windows(seed, final):
    """With emit-final too: each closed window once, with all its records, whatever the batches."""
    records = workload(seed)
    one_by_one = TopologyTestDriver(build(final), {"caching": False})
    for record in records:
        one_by_one.pipe_input("clicks", *record)
    expected = [(r.key, r.window_start, r.window_end, r.value, r.timestamp) for r in one_by_one.read_output("out")]
    batched = TopologyTestDriver(build(final), {"caching": False}, store_backend="rocksdb")
    rng, i = random.Random(seed), 0
    actual = []
    while i < len(records):
        size = rng.randrange(1, 40)
        batched.pipe_batch("clicks", records[i : i + size])
        if rng.random() < 0.3:
            batched.restart()
        actual += [(r.key, r.window_start, r.window_end, r.value, r.timestamp) for r in batched.read_output("out")]
        i += size
    assert actual == expected
    check_against_model({(k, s, e): v for k, s, e, v, _ in expected}, records)
    if final:
        assert len({(k, s) for k, s, *_ in expected}) == len(expected)
        close = max(t for *_, t in records) - GRACE
        updated = TopologyTestDriver(build(), {"caching": False})
        for record in records:
            updated.pipe_input("clicks", *record)
        closed = {(r.key, r.window_start) for r in updated.read_output("out") if r.window_end < close}
        assert {(k, s) for k, s, *_ in expected} == closed


@pytest.mark.spark
def test_sliding_windows_on_spark_count_the_records_within_them(spark, tmp_path):
    root, records = str(tmp_path), workload(5, n=400)
    create_topic(root, "clicks", partitions=2, key_type=pa.string(), value_type=pa.string())
    config = StreamsConfig.load({"application_id": "sliding", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 80})
    for part in (records[:200], records[200:]):
        Topic.open(root, "clicks").append(pa.table({"key": [k for k, _, _ in part], "value": [v for _, v, _ in part], "timestamp": pa.array([t for _, _, t in part], pa.int64())}))
        StreamsApp(build(both=True), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    output = Topic.open(root, "out").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    latest = {}
    for key, start, end, value in zip(*(output[c].to_pylist() for c in ("key", "window_start", "window_end", "value")), strict=True):
        latest[(key, start, end)] = value
    check_against_model(latest, records)
    # Emit-final: each window its partition's stream time closed, once, with all its records.
    partition_of = dict(zip(output["key"].to_pylist(), output["partition"].to_pylist(), strict=True))
    stream_time = {}
    for key, _, t in records:
        stream_time[partition_of[key]] = max(stream_time.get(partition_of[key], -1), t)
    final = Topic.open(root, "out-final").read()
    emitted = list(zip(*(final[c].to_pylist() for c in ("key", "window_start", "window_end")), strict=True))
    assert len(emitted) == len(set(emitted))
    closed = {w: c for w, c in latest.items() if w[2] < stream_time[partition_of[w[0]]] - GRACE}
    assert dict(zip(emitted, final["value"].to_pylist(), strict=True)) == closed and len(closed) > 30
