"""Kafka's null semantics in aggregations (issue 13, item 5), with caching off."""

import pytest

from deltastreams.streams import StreamsBuilder, TimeWindows, TopologyTestDriver

NO_CACHE = {"caching": False}


def topology(aggregate, *, windowed=False):
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    if windowed:
        grouped = grouped.windowed_by(TimeWindows.of_size(100))
    aggregate(grouped).to_stream().to("out")
    return builder.build()


def outputs(driver):
    return [(r.key, r.value) for r in driver.read_output("out")]


@pytest.mark.parametrize("windowed", [False, True], ids=["key-value", "windowed"])
def test_count_skips_a_null_value_and_counts_it_as_dropped(windowed):
    with TopologyTestDriver(topology(lambda g: g.count(name="counts"), windowed=windowed), NO_CACHE) as driver:
        driver.pipe_inputs("in", [("a", 1, 1), ("a", None, 2)])
        assert outputs(driver) == [("a", 1)]
        assert driver.dropped_records == 1
        assert driver.dead_letters() == []


@pytest.mark.parametrize("windowed", [False, True], ids=["key-value", "windowed"])
def test_reduce_skips_a_null_value_instead_of_starting_from_it(windowed):
    with TopologyTestDriver(topology(lambda g: g.reduce(lambda agg, v: agg + v), windowed=windowed), NO_CACHE) as driver:
        driver.pipe_inputs("in", [("a", None, 1), ("a", 2, 2), ("a", 3, 3)])
        assert outputs(driver) == [("a", 2), ("a", 5)]
        assert driver.dead_letters() == []
        assert driver.dropped_records == 1


def test_null_values_within_one_batch_are_skipped_too():
    with TopologyTestDriver(topology(lambda g: g.reduce(lambda agg, v: agg + v)), NO_CACHE) as driver:
        driver.pipe_batch("in", [("a", 1, 1), ("b", None, 2), ("a", None, 3), ("a", 4, 4)])
        assert outputs(driver) == [("a", 1), ("a", 5)]
        assert driver.dropped_records == 2


def test_aggregate_never_calls_the_aggregator_with_a_null_value():
    seen = []

    def aggregator(key, value, aggregate):
        seen.append(value)
        return aggregate + [value]

    with TopologyTestDriver(topology(lambda g: g.aggregate(list, aggregator, name="lists")), NO_CACHE) as driver:
        driver.pipe_inputs("in", [("a", "x", 1), ("a", None, 2), ("a", "y", 3)])
        assert seen == ["x", "y"]
        assert outputs(driver) == [("a", ["x"]), ("a", ["x", "y"])]
        assert driver.fetch("lists", "a") == ["x", "y"]


def test_a_null_aggregate_is_deleted_and_the_next_record_starts_afresh():
    # Kafka puts a null aggregate, which deletes the key: the next record is aggregated onto
    # initializer() again, and the revision carries that record's timestamp.
    def add_or_reset(key, value, aggregate):
        return None if value == 0 else aggregate + value

    with TopologyTestDriver(topology(lambda g: g.aggregate(lambda: 100, add_or_reset, name="sums")), NO_CACHE) as driver:
        driver.pipe_inputs("in", [("a", 1, 10), ("a", 0, 20), ("a", 5, 15)])
        assert [(r.value, r.timestamp) for r in driver.read_output("out")] == [(101, 10), (None, 20), (105, 15)]
        assert driver.fetch("sums", "a") == 105
        assert [entry.value is None for entry in driver.changelog("sums")] == [False, True, False]


def test_a_null_reduction_restarts_from_the_next_value():
    with TopologyTestDriver(topology(lambda g: g.reduce(lambda agg, v: None if v < 0 else agg + v)), NO_CACHE) as driver:
        driver.pipe_inputs("in", [("a", 1, 1), ("a", -1, 2), ("a", 7, 3), ("a", 1, 4)])
        assert outputs(driver) == [("a", 1), ("a", None), ("a", 7), ("a", 8)]
