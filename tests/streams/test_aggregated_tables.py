"""Tables from aggregations read by key: joined with a stream, joined with another table, and
re-grouped. Kafka walks each record depth-first through the sub-topology, so when one record
updates an aggregation and a join reads it, what the join sees depends on where both sit in that
walk; a batch must give what that walk gives, record by record (checked against a plain-Python
model and against one-record commits), with restarts in between."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from deltastreams.conf.errors import TopologyError
from deltastreams.streams import StreamsBuilder, TimeWindows, TopologyTestDriver


def build():
    builder = StreamsBuilder()
    clicks = builder.stream("clicks")
    counts = clicks.group_by_key().count(name="click-counts")
    sums = clicks.group_by_key().reduce(lambda total, value: total + value, name="click-sums")
    builder.stream("views").left_join(counts, lambda view, count: f"{view}:{count}").to("views-with-counts")
    counts.join(sums, lambda count, total: f"{count}/{total}").to_stream().to("count-and-sum")
    counts.group_by(lambda user, count: (count, user), name="by-count").count(name="users-per-count").to_stream().to("histogram")
    return builder.build()


def workload(seed):
    rng = random.Random(seed)
    return [(rng.choice(["clicks", "views"]), f"u{rng.randrange(5)}", rng.randrange(1, 9), i) for i in range(400)]


def model(records):
    """Kafka's walk of each click: source -> count (-> its join side, which reads the sums
    before this click) -> sum (-> its join side, which reads the count after it)."""
    counts, sums, views, joined = {}, {}, [], []
    for topic, user, value, _ in records:
        if topic == "views":
            views.append((user, f"{value}:{counts.get(user)}"))
            continue
        counts[user] = counts.get(user, 0) + 1
        if user in sums:
            joined.append((user, f"{counts[user]}/{sums[user]}"))
        sums[user] = sums.get(user, 0) + value
        joined.append((user, f"{counts[user]}/{sums[user]}"))
    return views, joined, Counter(counts.values())


def read(driver, topic):
    return [(r.key, r.value) for r in driver.read_output(topic)]


def final(pairs):
    latest = {}
    for key, value in pairs:
        latest[key] = value
    return {k: v for k, v in latest.items() if v}


@pytest.mark.parametrize("seed", [1, 2])
def test_reads_of_aggregated_tables_follow_kafkas_walk_of_each_record(seed):
    records = workload(seed)
    views, joined, histogram = model(records)
    one_by_one = TopologyTestDriver(build(), {"caching": False})
    for record in records:
        one_by_one.pipe_input(*record)
    assert read(one_by_one, "views-with-counts") == views
    assert read(one_by_one, "count-and-sum") == joined
    assert final(read(one_by_one, "histogram")) == dict(histogram)

    batched = TopologyTestDriver(build(), {"caching": False}, store_backend="rocksdb")
    rng, outputs = random.Random(seed), {"views-with-counts": [], "count-and-sum": [], "histogram": []}
    i = 0
    while i < len(records):
        size = rng.randrange(1, 60)
        # One topic per batch keeps the model's order (pipe_together orders topics by timestamp).
        batch = records[i : i + size]
        for topic in ("clicks", "views"):
            rows = [(u, v, t) for top, u, v, t in batch if top == topic]
            if rows and len({top for top, *_ in batch}) == 1:
                batched.pipe_batch(topic, rows)
        if len({top for top, *_ in batch}) > 1:
            batched.pipe_together(batch)
        if rng.random() < 0.3:
            batched.restart()
        for topic in outputs:
            outputs[topic] += read(batched, topic)
        i += size
    assert outputs["views-with-counts"] == views
    assert outputs["count-and-sum"] == joined
    assert final(outputs["histogram"]) == dict(histogram)


def test_a_windowed_aggregations_table_cannot_be_joined():
    builder = StreamsBuilder()
    windowed = builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size(1000)).count()
    with pytest.raises(TopologyError, match="windowed"):
        builder.stream("views").join(windowed, lambda v, c: c)


def test_a_topic_can_feed_only_one_source():
    builder = StreamsBuilder()
    builder.stream("clicks")
    with pytest.raises(TopologyError, match="already read by"):
        builder.stream("clicks")


@pytest.mark.parametrize("caching", [False, True])
def test_a_stream_joins_a_regrouped_tables_aggregate_as_it_stands(caching):
    # A re-grouped table's aggregation read by key logs its changes for the join; it used to
    # fail the batch on the first update of a group the store already held.
    builder = StreamsBuilder()
    totals = builder.table("scores").group_by(lambda player, score: (player[0], score), name="by-team").reduce(
        lambda total, score: total + score, lambda total, score: total - score, name="team-totals"
    )
    builder.stream("lookups").join(totals, lambda ask, total: f"{ask}={total}").to("answers")
    with TopologyTestDriver(builder.build(), {"caching": caching}) as driver:
        driver.pipe_input("scores", "a1", 5, 1)
        driver.pipe_input("lookups", "a", "a?", 2)
        driver.pipe_input("scores", "a2", 7, 3)
        driver.pipe_input("scores", "a1", 1, 4)
        driver.pipe_input("lookups", "a", "a?", 5)
        driver.pipe_input("scores", "a2", None, 6)
        driver.pipe_input("lookups", "a", "a?", 7)
        driver.pipe_input("lookups", "b", "b?", 8)
        assert read(driver, "answers") == [("a", "a?=5"), ("a", "a?=8"), ("a", "a?=1")]


@pytest.mark.parametrize("batch", [False, True], ids=["record-by-record", "one-batch"])
def test_records_forwarded_for_one_record_update_a_table_one_after_another(batch):
    """flat_map_values forwards two values for one record into one table key: Kafka walks the
    first through the table and the re-grouping before the second, so the second update's old
    value is the first (its subtraction from g1 goes out), as the differential oracle found."""
    builder = StreamsBuilder()
    table = builder.stream("in").flat_map_values(lambda v: [v, v + "x"]).to_table()
    table.group_by(lambda k, v: ("g0" if v.endswith("x") else "g1", v)).count().to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    rows = [("a", "1", 10), ("b", "2", 11), ("a", "3", 12)]
    if batch:
        driver.pipe_batch("in", rows)
    else:
        for row in rows:
            driver.pipe_input("in", *row)
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [
        ("g1", 1, 10), ("g1", 0, 10), ("g0", 1, 10),
        ("g1", 1, 11), ("g1", 0, 11), ("g0", 2, 11),
        ("g0", 1, 12), ("g1", 1, 12), ("g1", 0, 12), ("g0", 2, 12),
    ]


def test_a_table_filter_failing_on_the_old_value_of_one_forwarded_record_rejects_only_that_one():
    """Two values forwarded for one record (same _seq) are read through a filter as old values:
    the one whose old value the filter fails on goes to the dead letters, the other goes on (the
    rows were matched by _seq, so both were kept and the batch failed)."""
    builder = StreamsBuilder()
    table = builder.stream("in").flat_map_values(lambda v: v.split(",")).to_table().filter(lambda k, v: 1 / int(v) > 0)
    table.group_by(lambda k, v: ("g", v)).count().to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("in", "a", "0", 10)  # stored by the table's source, failed by the filter
    driver.pipe_input("in", "a", "1,2", 11)  # "1"'s old value is "0": the filter fails on it
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [("g", 1, 11)]
    assert [r.value["source_offset"] for r in driver.dead_letters()] == [0, 1]
