"""Emit-on-window-close gives the same records whether a task commits every record or many per
batch (with restarts), and each closed window once, with the result suppress(until_window_closes)
gives for it."""

from __future__ import annotations

import random

import pytest

from deltastreams.streams import EmitStrategy, StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver

WINDOWS = TimeWindows.of_size(100).advance_by(50).grace(30)


def build(final: bool):
    builder = StreamsBuilder()
    windowed = builder.stream("in").group_by_key().windowed_by(WINDOWS)
    if final:
        windowed.emit_strategy(EmitStrategy.on_window_close()).count(name="counts").to_stream().to("out")
    else:
        windowed.count(name="counts").suppress(Suppressed.until_window_closes()).to_stream().to("out")
    return builder.build()


def read(driver):
    return [(r.key, r.window_start, r.value, r.timestamp) for r in driver.read_output("out")]


@pytest.mark.parametrize("seed", [1, 2])
def test_emit_final_is_batch_independent_and_agrees_with_suppress(seed):
    rng = random.Random(seed)
    records, clock = [], 0
    for _ in range(400):
        clock += rng.randrange(0, 9)
        records.append((f"k{rng.randrange(5)}", 1, max(0, clock - rng.randrange(0, 60))))
    one_by_one = TopologyTestDriver(build(True), {"caching": False})
    for key, value, ts in records:
        one_by_one.pipe_input("in", key, value, ts)
    expected = read(one_by_one)
    batched = TopologyTestDriver(build(True), {"caching": True}, store_backend="rocksdb")
    actual, i = [], 0
    while i < len(records):
        size = rng.randrange(1, 40)
        batched.pipe_batch("in", records[i : i + size])
        if rng.random() < 0.3:
            batched.restart()
        actual += read(batched)
        i += size
    assert actual == expected
    windows = [(k, s) for k, s, _, _ in expected]
    assert len(windows) == len(set(windows)) > 20  # each closed window once
    suppressed = TopologyTestDriver(build(False), {"caching": False})
    for key, value, ts in records:
        suppressed.pipe_input("in", key, value, ts)
    assert sorted((k, s, v) for k, s, v, _ in expected) == sorted((k, s, v) for k, s, v, _ in read(suppressed))
