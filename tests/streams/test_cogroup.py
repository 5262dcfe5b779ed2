"""Cogroup behaviour beyond Kafka's vectors (those are in test_kafka_cogroup_vectors.py): how the
DSL builds it, and what happens to records it cannot fold."""

from __future__ import annotations

import pytest

from deltastreams.streams import ProcessingError, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, TopologyError, TopologyTestDriver


def concat(key, value, agg):
    return f"{agg}{value}"


def bracket(key, value, agg):
    return f"{agg}[{value}]"


def test_cogrouping_a_grouped_stream_again_replaces_its_aggregator():
    """Kafka keeps one aggregator per grouped stream (a map): the same as aggregating that stream
    alone with the last aggregator."""
    cogrouped, plain = StreamsBuilder(), StreamsBuilder()
    grouped = cogrouped.stream("in").group_by_key()
    grouped.cogroup(concat).cogroup(grouped, bracket).aggregate(str, name="store").to_stream().to("out")
    plain.stream("in").group_by_key().aggregate(str, bracket, name="store").to_stream().to("out")
    results = []
    for builder in (cogrouped, plain):
        driver = TopologyTestDriver(builder.build(), {"caching": False})
        for i, key in enumerate("abab"):
            driver.pipe_input("in", key, str(i), i)
        results.append([(r.key, r.value, r.timestamp) for r in driver.read_output("out")])
    assert results[0] == results[1]
    assert len(results[0]) == 4


def test_inputs_with_different_key_types_fail_naming_the_types():
    builder = StreamsBuilder()
    one, two = builder.stream("one").group_by_key(), builder.stream("two").group_by_key()
    one.cogroup(concat).cogroup(two, concat).aggregate(str).to_stream().to("out")
    driver = TopologyTestDriver(builder.build())
    with pytest.raises(ProcessingError, match=r"keys have different types \(string, int64\)"):
        driver.pipe_together([("one", "k", "a", 1), ("two", 7, "b", 2)])


def test_a_failing_aggregator_dead_letters_its_record_and_the_others_fold():
    builder = StreamsBuilder()
    one, two = builder.stream("one").group_by_key(), builder.stream("two").group_by_key()

    def fragile(key, value, agg):
        if value == "boom":
            raise ValueError("no booms")
        return agg + value

    one.cogroup(concat).cogroup(two, fragile).aggregate(str, name="store").to_stream().to("out")
    driver = TopologyTestDriver(builder.build())
    driver.pipe_together([("one", "k", "a", 1), ("two", "k", "boom", 2), ("two", "k", "b", 3), ("one", None, "c", 4)])
    letters = driver.dead_letters()
    # The null key is skipped by its input's node (the first, on topic one); the failing fold is
    # reported by the merge, which runs every input's fold.
    assert [(d.value["node"], d.value["reason"].split(":")[0]) for d in letters] == [
        ("COGROUPKSTREAM-AGGREGATE-0000000002", "null key"),
        ("COGROUPKSTREAM-MERGE-0000000004", "test_a_failing_aggregator_dead_letters_its_record_and_the_others_fold.<locals>.fragile raised ValueError"),
    ]
    assert driver.get_key_value_store("store").get("k") == concat("k", "b", concat("k", "a", ""))


def test_a_windowed_cogroup_table_cannot_join_a_plain_table():
    builder = StreamsBuilder()
    windowed = builder.stream("one").group_by_key().cogroup(concat).windowed_by(TimeWindows.of_size(10)).aggregate(str)
    with pytest.raises(TopologyError, match="same kind of key, got time-windowed keys"):
        windowed.join(builder.table("t"), lambda a, b: a)


def test_windowed_by_takes_windows():
    with pytest.raises(TopologyError, match="windowed_by"):
        StreamsBuilder().stream("one").group_by_key().cogroup(concat).windowed_by(TimeWindows())


def _lagging_input(windows, *, caching: bool = False) -> list:
    builder = StreamsBuilder()
    one, two = builder.stream("in").group_by_key(), builder.stream("in2").group_by_key()
    cogrouped = one.cogroup(lambda k, v, agg: f"{agg}*{v}").cogroup(two, lambda k, v, agg: f"{agg}/{v}").windowed_by(windows)
    table = cogrouped.aggregate(lambda: "0", lambda k, a, b: f"{a}|{b}") if isinstance(windows, SessionWindows) else cogrouped.aggregate(lambda: "0")
    table.to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": caching})
    driver.pipe_input("in", "a", "3", 29)
    for value, timestamp in (("4", 0), ("5", 1), ("6", 15), ("7", 16), ("8", 25)):
        driver.pipe_input("in2", "a", value, timestamp)
    records = [(r.window_start, r.window_end, r.value, r.timestamp) for r in driver.read_output("out")]
    return records, driver.dropped_records


def test_each_cogrouped_input_judges_lateness_by_its_own_stream_time():
    """Kafka gives each cogrouped stream its own windowed-aggregate processor, each with its own
    stream time: records of ``in2`` far behind ``in`` are not late for their input. They meet
    windows the shared store no longer reads (older than its retention, size + grace, behind the
    latest window start written), so each starts from the initializer. Kafka 4.3.1's
    TopologyTestDriver gives exactly these records (checked by the differential oracle)."""
    records, dropped = _lagging_input(TimeWindows.of_size_and_grace(10, 0))
    assert records == [(20, 30, "0*3", 29), (0, 10, "0/4", 0), (0, 10, "0/5", 1), (10, 20, "0/6", 15), (10, 20, "0/7", 16), (20, 30, "0*3/8", 29)]
    assert dropped == 0


def test_each_cogrouped_input_keeps_its_own_stream_time_for_sessions_and_sliding_windows():
    """As above, for sessions (a session ending past the store's retention is not found to merge
    with) and sliding windows; Kafka 4.3.1's records, through the differential oracle."""
    sessions, dropped = _lagging_input(SessionWindows.of_inactivity_gap_and_grace(3, 0))
    assert dropped == 0
    assert sessions == [(29, 29, "0*3", 29), (0, 0, "0/4", 0), (1, 1, "0/5", 1), (15, 15, "0/6", 15), (16, 16, "0/7", 16), (25, 25, "0/8", 25)]
    sliding, dropped = _lagging_input(SlidingWindows.of_time_difference_and_grace(5, 0))
    assert dropped == 0
    assert sliding == [
        (24, 29, "0*3", 29), (0, 5, "0/4", 0), (0, 5, "0/5", 1), (10, 15, "0/6", 15), (11, 16, "0/7", 16),
        (24, 29, "0*3/8", 29), (20, 25, "0/8", 25), (26, 31, "0*3", 29),
    ]
