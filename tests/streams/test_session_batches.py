"""Session windows give the same records whether a task commits every record or takes many per
batch, with restarts in between (caching off); and every record that was not dropped as late is
in exactly one of the sessions standing at the end (merged-away sessions were deleted)."""

from __future__ import annotations

import random

import pytest

from deltastreams.streams import EmitStrategy, SessionWindows, StreamsBuilder, TopologyTestDriver

GAP, GRACE = 30, 20


def build(final=False):
    builder = StreamsBuilder()
    sessions = builder.stream("clicks").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP, GRACE))
    if final:
        sessions = sessions.emit_strategy(EmitStrategy.on_window_close())
    sessions.aggregate(lambda: "", lambda key, value, agg: agg + value, lambda key, one, two: one + two, name="sessions").to_stream().to("out")
    return builder.build()


def outputs(driver):
    return [(r.key, r.window_start, r.window_end, r.value, r.timestamp) for r in driver.read_output("out")]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batches_and_restarts_do_not_change_the_sessions(seed):
    rng = random.Random(seed)
    records, clock = [], 0
    for i in range(500):
        clock += rng.randrange(0, 12)
        records.append((f"k{rng.randrange(4)}", chr(97 + i % 26), max(0, clock - rng.randrange(0, 90 if rng.random() < 0.2 else 30))))  # some beyond grace
    one_by_one = TopologyTestDriver(build(), {"caching": False})
    for key, value, ts in records:
        one_by_one.pipe_input("clicks", key, value, ts)
    expected = outputs(one_by_one)
    batched = TopologyTestDriver(build(), {"caching": False}, store_backend="rocksdb")
    actual, i = [], 0
    while i < len(records):
        size = rng.randrange(1, 50)
        batched.pipe_batch("clicks", records[i : i + size])
        if rng.random() < 0.3:
            batched.restart()
        actual += outputs(batched)
        i += size
    assert actual == expected
    assert batched.dropped_records == one_by_one.dropped_records > 0

    # The last revision per session: the model's sessions over the records that were not dropped.
    latest = {}
    for key, start, end, value, _ in expected:
        latest[(key, start, end)] = value
    live = {k: v for k, v in latest.items() if v is not None}
    kept_values = sorted(c for v in live.values() for c in v)
    assert len(kept_values) == len(records) - one_by_one.dropped_records
    for (key, start, end), value in live.items():
        assert start <= end and value


@pytest.mark.parametrize("seed", [4, 5])
def test_emit_final_sessions_are_batch_independent_and_each_closed_session_comes_once(seed):
    rng = random.Random(seed)
    records, clock = [], 0
    for i in range(400):
        clock += rng.randrange(0, 12)
        records.append((f"k{rng.randrange(4)}", chr(97 + i % 26), max(0, clock - rng.randrange(0, 30))))
    one_by_one = TopologyTestDriver(build(final=True), {"caching": False})
    for key, value, ts in records:
        one_by_one.pipe_input("clicks", key, value, ts)
    expected = outputs(one_by_one)
    batched = TopologyTestDriver(build(final=True), {"caching": True}, store_backend="rocksdb")
    actual, i = [], 0
    while i < len(records):
        size = rng.randrange(1, 50)
        batched.pipe_batch("clicks", records[i : i + size])
        if rng.random() < 0.3:
            batched.restart()
        actual += outputs(batched)
        i += size
    assert actual == expected
    assert len(expected) > 20 and all(value is not None for *_, value, _ in expected)
    assert len({(k, s, e) for k, s, e, _, _ in expected}) == len(expected)  # each session once
