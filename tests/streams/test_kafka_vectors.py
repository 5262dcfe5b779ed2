"""Kafka Streams' own unit-test vectors, run through our TopologyTestDriver.

From apache/kafka ``KGroupedStreamImplTest`` (processData, with its null value) and
``KStreamWindowAggregateTest`` (testAggBasic, the expired-window cases). Kafka's
``MockInitializer.STRING_INIT`` is ``"0"`` and ``MockAggregator.TOSTRING_ADDER`` appends
``"+" + value``; ``MockReducer.STRING_ADDER`` joins with ``"+"``. Kafka's tests disable caching
where they list every revision; so do these.
"""

import pytest

from deltastreams.streams import StreamsBuilder, TimeWindows, TopologyTestDriver

NO_CACHE = {"caching": False}
DAY_MS = 86_400_000  # Kafka's deprecated TimeWindows.of(size) keeps a one-day grace period


def string_adder(key, value, aggregate):
    return f"{aggregate}+{value}"


def process_data(driver):
    """KGroupedStreamImplTest.processData: the last record has a null value."""
    for key, value, ts in [("1", "A", 5), ("2", "B", 1), ("1", "C", 3), ("1", "D", 10), ("3", "E", 8), ("3", "F", 9)]:
        driver.pipe_input("topic", key, value, timestamp=ts)
    driver.pipe_input("topic", "3", None)


def grouped(build):
    builder = StreamsBuilder()
    build(builder.stream("topic").group_by_key()).to_stream().to("out")
    return builder.build()


def latest_per_key(records):
    return {r.key: (r.value, r.timestamp) for r in records}


def test_count_materializes_results_and_skips_the_null_value():
    # shouldCountAndMaterializeResults + shouldLogAndMeasureSkipsInAggregate
    with TopologyTestDriver(grouped(lambda g: g.count(name="count"))) as driver:
        process_data(driver)
        count = driver.get_key_value_store("count")
        assert (count.get("1"), count.get("2"), count.get("3")) == (3, 1, 2)
        assert latest_per_key(driver.read_output("out")) == {"1": (3, 10), "2": (1, 1), "3": (2, 9)}
        assert driver.dropped_records == 1
        assert driver.dead_letters() == []


def test_reduce_materializes_results_and_skips_the_null_value():
    # shouldReduceAndMaterializeResults + shouldLogAndMeasureSkipsInReduce
    with TopologyTestDriver(grouped(lambda g: g.reduce(lambda a, b: f"{a}+{b}", name="reduce"))) as driver:
        process_data(driver)
        reduced = driver.get_key_value_store("reduce")
        assert (reduced.get("1"), reduced.get("2"), reduced.get("3")) == ("A+C+D", "B", "E+F")
        assert latest_per_key(driver.read_output("out")) == {"1": ("A+C+D", 10), "2": ("B", 1), "3": ("E+F", 9)}
        assert driver.dropped_records == 1


def test_aggregate_materializes_results_and_skips_the_null_value():
    # shouldAggregateAndMaterializeResults
    with TopologyTestDriver(grouped(lambda g: g.aggregate(lambda: "0", string_adder, name="aggregate"))) as driver:
        process_data(driver)
        aggregate = driver.get_key_value_store("aggregate")
        assert (aggregate.get("1"), aggregate.get("2"), aggregate.get("3")) == ("0+A+C+D", "0+B", "0+E+F")
        assert latest_per_key(driver.read_output("out")) == {"1": ("0+A+C+D", 10), "2": ("0+B", 1), "3": ("0+E+F", 9)}
        assert driver.dropped_records == 1


def windowed_rows(records):
    return [(r.key, r.window_start, r.window_end, r.value, r.timestamp) for r in records]


def test_windowed_count_matches_kafkas_count_windowed():
    # KGroupedStreamImplTest.doCountWindowed
    topology = grouped(lambda g: g.windowed_by(TimeWindows.of_size(500).grace(DAY_MS)).count(name="windowed"))
    with TopologyTestDriver(topology, NO_CACHE) as driver:
        for key, value, ts in [
            ("1", "A", 0), ("1", "A", 499), ("1", "A", 100), ("2", "B", 0), ("2", "B", 100), ("2", "B", 200),
            ("3", "C", 1), ("1", "A", 500), ("1", "A", 500), ("2", "B", 500), ("2", "B", 500), ("3", "B", 100),
        ]:  # fmt: skip
            driver.pipe_input("topic", key, value, timestamp=ts)
        assert windowed_rows(driver.read_output("out")) == [
            ("1", 0, 500, 1, 0),
            ("1", 0, 500, 2, 499),
            ("1", 0, 500, 3, 499),
            ("2", 0, 500, 1, 0),
            ("2", 0, 500, 2, 100),
            ("2", 0, 500, 3, 200),
            ("3", 0, 500, 1, 1),
            ("1", 500, 1000, 1, 500),
            ("1", 500, 1000, 2, 500),
            ("2", 500, 1000, 1, 500),
            ("2", 500, 1000, 2, 500),
            ("3", 0, 500, 2, 100),
        ]
        assert driver.get_window_store("windowed").fetch("1", 0) == 3


def test_hopping_window_aggregate_matches_kafkas_agg_basic():
    # KStreamWindowAggregateTest.testAggBasic: size 10, advance 5, grace 100
    windows = TimeWindows.of_size(10).advance_by(5).grace(100)
    topology = grouped(lambda g: g.windowed_by(windows).aggregate(lambda: "0", string_adder, name="topic1-Canonized"))
    inputs = [
        ("A", "1", 0), ("B", "2", 1), ("C", "3", 2), ("D", "4", 3), ("A", "1", 4),
        ("A", "1", 5), ("B", "2", 6), ("D", "4", 7), ("B", "2", 8), ("C", "3", 9),
        ("A", "1", 10), ("B", "2", 11), ("D", "4", 12), ("B", "2", 13), ("C", "3", 14),
        ("B", "1", 3), ("B", "2", 2), ("B", "3", 9),
    ]  # fmt: skip
    with TopologyTestDriver(topology, NO_CACHE) as driver:
        for key, value, ts in inputs:
            driver.pipe_input("topic", key, value, timestamp=ts)
        assert windowed_rows(driver.read_output("out")) == [
            ("A", 0, 10, "0+1", 0),
            ("B", 0, 10, "0+2", 1),
            ("C", 0, 10, "0+3", 2),
            ("D", 0, 10, "0+4", 3),
            ("A", 0, 10, "0+1+1", 4),
            ("A", 0, 10, "0+1+1+1", 5),
            ("A", 5, 15, "0+1", 5),
            ("B", 0, 10, "0+2+2", 6),
            ("B", 5, 15, "0+2", 6),
            ("D", 0, 10, "0+4+4", 7),
            ("D", 5, 15, "0+4", 7),
            ("B", 0, 10, "0+2+2+2", 8),
            ("B", 5, 15, "0+2+2", 8),
            ("C", 0, 10, "0+3+3", 9),
            ("C", 5, 15, "0+3", 9),
            ("A", 5, 15, "0+1+1", 10),
            ("A", 10, 20, "0+1", 10),
            ("B", 5, 15, "0+2+2+2", 11),
            ("B", 10, 20, "0+2", 11),
            ("D", 5, 15, "0+4+4", 12),
            ("D", 10, 20, "0+4", 12),
            ("B", 5, 15, "0+2+2+2+2", 13),
            ("B", 10, 20, "0+2+2", 13),
            ("C", 5, 15, "0+3+3", 14),
            ("C", 10, 20, "0+3", 14),
            ("B", 0, 10, "0+2+2+2+1", 8),
            ("B", 0, 10, "0+2+2+2+1+2", 8),
            ("B", 0, 10, "0+2+2+2+1+2+3", 9),
            ("B", 5, 15, "0+2+2+2+2+3", 13),
        ]


def expired_window_topology(windows):
    builder = StreamsBuilder()
    (
        builder.stream("topic")
        .group_by_key()
        .windowed_by(windows)
        .aggregate(lambda: "", string_adder, name="topic1-Canonicalized")
        .to_stream()
        .map(lambda key, value: (f"[{key.key}@{key.window_start}/{key.window_end}]", value))
        .to("output")
    )
    return builder.build()


@pytest.mark.parametrize(
    ("windows", "inputs", "expected"),
    [
        pytest.param(  # shouldLogAndMeterWhenSkippingExpiredWindow
            TimeWindows.of_size(10).advance_by(5).grace(90),
            [("100", 100), ("0", 0), ("1", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6)],
            [("[k@95/105]", "+100", 100), ("[k@100/110]", "+100", 100), ("[k@5/15]", "+5", 5), ("[k@5/15]", "+5+6", 6)],
            id="expired-window",
        ),
        pytest.param(  # shouldLogAndMeterWhenSkippingExpiredWindowByGrace
            TimeWindows.of_size(10).advance_by(10).grace(90),
            [("100", 200), ("0", 100), ("1", 101), ("2", 102), ("3", 103), ("4", 104), ("5", 105), ("6", 6)],
            [("[k@200/210]", "+100", 200)],
            id="expired-by-grace",
        ),
    ],
)
def test_records_for_expired_windows_are_dropped_and_counted_per_window(windows, inputs, expected):
    with TopologyTestDriver(expired_window_topology(windows), NO_CACHE) as driver:
        for value, ts in inputs:
            driver.pipe_input("topic", "k", value, timestamp=ts)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("output")] == expected
        assert driver.dropped_records == 7  # Kafka's dropped-records-total


def test_a_null_key_in_a_windowed_aggregation_goes_to_the_dead_letter_topic():
    # shouldLogAndMeterWhenSkippingNullKey: Kafka drops and counts the record; we keep it, with the
    # reason, in the dead-letter topic (docs/differences-from-kafka.md).
    topology = expired_window_topology(TimeWindows.of_size(10).advance_by(5))
    with TopologyTestDriver(topology, NO_CACHE) as driver:
        driver.pipe_input("topic", None, "1", timestamp=0)
        assert driver.read_output("output") == []
        assert [r.value["reason"] for r in driver.dead_letters()] == ["null key: aggregations group by key"]
        assert driver.dropped_records == 0
