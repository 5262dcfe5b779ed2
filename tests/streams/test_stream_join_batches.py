"""A stream-stream join gives the same records, in the same order, whether a task takes its input
one record per commit (as Kafka's tests do) or many records of both sides per batch (as a Spark
micro-batch does), and whether or not its stores are rebuilt from their changelogs between
commits (a restart: the join's stream time and pending non-joined records must survive it).

Within a batch, timestamps rise (ties: the left topic first), so the order the task takes the
batch's records in is unambiguous; between batches they jump back, so records arrive late, some
within the grace period and some beyond the stores' retention."""

from __future__ import annotations

import random

import pytest

from deltastreams.streams import JoinWindows, StreamsBuilder, TopologyTestDriver


def joiner(key, left, right):
    return f"{key}:{left}+{right}"


def build(kind):
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(20, 15).after(35)
    getattr(builder.stream("left"), kind)(builder.stream("right"), joiner, windows).to("out")
    return builder.build()


def batches(rng, count):
    out, base = [], 0
    for b in range(count):
        base = max(0, base + rng.randrange(-60, 90))
        size = rng.randrange(1, 25)
        rows = []
        for i in range(size):
            topic = rng.choice(("left", "right"))
            value = None if rng.random() < 0.05 else f"{topic[0]}{b}.{i}"
            key = None if rng.random() < 0.03 else rng.randrange(6)
            rows.append((topic, key, value, base + rng.randrange(80)))
        rows.sort(key=lambda r: (r[3], r[0] != "left"))
        out.append(rows)
    return out


def outputs(driver):
    return [(r.key, r.value, r.timestamp) for r in driver.read_output("out")]


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batches_and_restarts_do_not_change_the_results(kind, seed):
    rng = random.Random(seed)
    workload = batches(rng, 40)
    one_by_one = TopologyTestDriver(build(kind), {"caching": False})
    batched = TopologyTestDriver(build(kind), {"caching": False}, store_backend="rocksdb")
    expected, actual = [], []
    for rows in workload:
        for topic, key, value, timestamp in rows:
            one_by_one.pipe_input(topic, key, value, timestamp)
        batched.pipe_together(rows)
        if rng.random() < 0.3:
            batched.restart()
        expected += outputs(one_by_one)
        actual += outputs(batched)
    one_by_one.close()
    batched.close()
    assert len(expected) > 100
    assert actual == expected
