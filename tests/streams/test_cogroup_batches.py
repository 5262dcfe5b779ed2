"""A cogroup gives the same records, in the same order, whether its task takes one record per
commit (as Kafka's tests do) or many records of all its inputs per batch (as a Spark micro-batch
does), with its store rebuilt from its changelog between commits (a restart); plain, time-,
session- and sliding-windowed alike. The inputs interleave within a batch, one input's records
reach two of the cogroup's inputs (a stream cogrouped with a filtered copy of itself), values
differ in type between inputs, and some records are late, null-valued or null-keyed.

Within a batch, timestamps rise (ties: topic ``one`` first), so the order the task takes the
batch's records in is unambiguous; between batches they jump back, so records arrive late."""

from __future__ import annotations

import random

import pytest

from deltastreams.streams import SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, TopologyTestDriver


def add(key, value, agg):
    return f"{agg}+{value}"


def subtract(key, value, agg):
    return f"{agg}-{value}"


def twice(key, value, agg):
    return f"{agg}*{value}"


def merge(key, one, two):
    return f"({one}|{two})"


WINDOWS = {
    "plain": None,
    "time": TimeWindows.of_size(50).advance_by(20).grace(15),
    "session": SessionWindows.of_inactivity_gap_and_grace(20, 15),
    "sliding": SlidingWindows.of_time_difference_and_grace(30, 15),
}


def build(kind):
    builder = StreamsBuilder()
    one, two = builder.stream("one"), builder.stream("two")
    cogroup = (
        one.group_by_key().cogroup(add)
        .cogroup(two.group_by_key(), subtract)
        .cogroup(one.filter(lambda key, value: value is not None and value.endswith("0")).group_by_key(), twice)
    )
    if WINDOWS[kind] is not None:
        cogroup = cogroup.windowed_by(WINDOWS[kind])
    table = cogroup.aggregate(lambda: "", merge, name="agg") if kind == "session" else cogroup.aggregate(lambda: "", name="agg")
    table.to_stream().to("out")
    return builder.build()


def batches(rng, count):
    out, base = [], 0
    for b in range(count):
        base = max(0, base + rng.randrange(-40, 70))
        rows = []
        for i in range(rng.randrange(1, 25)):
            topic = rng.choice(("one", "two"))
            value = None if rng.random() < 0.05 else (f"{b}.{i}" if topic == "one" else b * 100 + i)
            key = None if rng.random() < 0.03 else rng.randrange(5)
            rows.append((topic, key, value, base + rng.randrange(60)))
        rows.sort(key=lambda r: (r[3], r[0] != "one"))
        out.append(rows)
    return out


def outputs(driver):
    return [(r.key, r.window_start, r.window_end, r.value, r.timestamp) for r in driver.read_output("out")]


@pytest.mark.parametrize("kind", list(WINDOWS))
@pytest.mark.parametrize("seed", [1, 2])
def test_batches_and_restarts_do_not_change_the_cogroup(kind, seed):
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
    assert len(expected) > 300
    assert actual == expected
    assert batched.dropped_records == one_by_one.dropped_records > 0
    assert len(batched.dead_letters()) == len(one_by_one.dead_letters()) > 0
    one_by_one.close()
    batched.close()


def test_the_plain_cogroup_folds_every_input_in_task_order():
    """Against an independent fold: each key's aggregate is every non-null record of every input
    folded by its input's aggregator, in the order the task took the records. A record of ``one``
    ending in 0 reaches two inputs; Kafka hands a record to a node's children in the order they
    were created, and the filter was created before the cogroup's nodes (they are made by
    ``aggregate``), so its copy is folded (``twice``) before the record itself (``add``)."""
    rng = random.Random(7)
    workload = batches(rng, 30)
    driver = TopologyTestDriver(build("plain"), {"caching": True}, store_backend="rocksdb")
    model: dict[int, str] = {}
    for rows in workload:
        driver.pipe_together(rows)
        for topic, key, value, _ in rows:
            if key is None or value is None:
                continue
            if topic == "two":
                model[key] = subtract(key, value, model.get(key, ""))
                continue
            if value.endswith("0"):
                model[key] = twice(key, value, model.get(key, ""))
            model[key] = add(key, value, model.get(key, ""))
    store = driver.get_key_value_store("agg")
    assert {key: store.get(key) for key in model} == model
    driver.close()
