"""Kafka Streams' own vectors for sliding windows, run through our TopologyTestDriver (caching on
and off; Kafka's driver commits after every record): ``SlidingWindowedKStreamImplTest.
shouldCountSlidingWindows`` (the last value per window) and ``KStreamSlidingWindowAggregateTest``
testAggregateSmallInput and testEarlyRecordsSmallInput (every value each window took, as the
test's gatherOutput collects them by window start), with the default emit strategy. Windows are
``[start, start + difference]``, both ends inclusive, as Kafka's."""

from __future__ import annotations

import pytest

from deltastreams.streams import EmitStrategy, SlidingWindows, StreamsBuilder, TopologyTestDriver


def run(windows, records, caching, aggregate=True):
    builder = StreamsBuilder()
    windowed = builder.stream("topic").group_by_key().windowed_by(windows)
    table = windowed.aggregate(lambda: "0", lambda key, value, agg: f"{agg}+{value}") if aggregate else windowed.count()
    table.to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": caching})
    for key, value, timestamp in records:
        driver.pipe_input("topic", key, value, timestamp)
    return driver.read_output("out")


def gather(output):
    by_start: dict[int, set] = {}
    for r in output:
        by_start.setdefault(r.window_start, set()).add((r.value, r.timestamp))
    return by_start


@pytest.mark.parametrize("caching", [False, True])
def test_sliding_windowed_kstream_impl_test_should_count_sliding_windows(caching):
    """SlidingWindowedKStreamImplTest.shouldCountSlidingWindows"""
    records = [("1", "1", 100), ("1", "2", 150), ("1", "3", 500), ("2", "10", 200), ("2", "20", 150)]
    last = {}
    for r in run(SlidingWindows.of_time_difference_and_grace(100, 1000), records, caching, aggregate=False):
        last[(r.key, r.window_start, r.window_end)] = (r.value, r.timestamp)
    assert last == {
        ("1", 0, 100): (1, 100),
        ("1", 101, 201): (1, 150),
        ("1", 50, 150): (2, 150),
        ("1", 400, 500): (1, 500),
        ("2", 100, 200): (2, 200),
        ("2", 50, 150): (1, 150),
        ("2", 151, 251): (1, 200),
    }


@pytest.mark.parametrize("caching", [False, True])
def test_sliding_window_aggregate_test_aggregate_small_input(caching):
    """KStreamSlidingWindowAggregateTest.testAggregateSmallInput"""
    records = [("A", "1", 10), ("A", "2", 10), ("A", "3", 14), ("A", "4", 15), ("A", "5", 20), ("A", "6", 22), ("A", "7", 30)]
    assert gather(run(SlidingWindows.of_time_difference_and_grace(10, 5), records, caching)) == {
        0: {("0+1", 10), ("0+1+2", 10)},
        4: {("0+1+2+3", 14)},
        5: {("0+1+2+3+4", 15)},
        10: {("0+1+2+3+4+5", 20)},
        11: {("0+3", 14), ("0+3+4", 15), ("0+3+4+5", 20)},
        12: {("0+3+4+5+6", 22)},
        15: {("0+4", 15), ("0+4+5", 20), ("0+4+5+6", 22)},
        16: {("0+5", 20), ("0+5+6", 22)},
        20: {("0+5+6+7", 30)},
        21: {("0+6", 22), ("0+6+7", 30)},
        23: {("0+7", 30)},
    }


@pytest.mark.parametrize("caching", [False, True])
def test_sliding_window_aggregate_test_early_records_small_input(caching):
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput"""
    records = [("A", "1", 0), ("A", "2", 5), ("A", "3", 6), ("A", "4", 3), ("A", "5", 13), ("A", "6", 10), ("A", "7", 70)]
    assert gather(run(SlidingWindows.of_time_difference_and_grace(50, 0), records, caching)) == {
        0: {("0+1", 0), ("0+1+2", 5), ("0+1+2+3", 6), ("0+1+2+3+4", 6), ("0+1+2+3+4+5", 13), ("0+1+2+3+4+5+6", 13)},
        1: {("0+2", 5), ("0+2+3", 6), ("0+2+3+4", 6), ("0+2+3+4+5", 13), ("0+2+3+4+5+6", 13)},
        4: {("0+2+3", 6), ("0+2+3+5", 13), ("0+2+3+5+6", 13)},
        6: {("0+3", 6), ("0+3+5", 13), ("0+3+5+6", 13)},
        7: {("0+5", 13), ("0+5+6", 13)},
        11: {("0+5", 13)},
        20: {("0+7", 70)},
    }


def run_final(windows, records, reduce=False):
    """Kafka's ON_WINDOW_CLOSE variant of the same tests (its store then has no cache)."""
    builder = StreamsBuilder()
    windowed = builder.stream("topic").group_by_key().windowed_by(windows).emit_strategy(EmitStrategy.on_window_close())
    if reduce:
        table = windowed.reduce(lambda agg, value: f"{agg}+{value}")
    else:
        table = windowed.aggregate(lambda: "0", lambda key, value, agg: f"{agg}+{value}")
    table.to_stream().to("out")
    driver = TopologyTestDriver(builder.build())
    for key, value, timestamp in records:
        driver.pipe_input("topic", key, value, timestamp)
    output = driver.read_output("out")
    windows_out = [(r.key, r.window_start) for r in output]
    assert len(windows_out) == len(set(windows_out)), "a window was emitted twice"
    return gather(output)


SMALL_INPUT = [("A", "1", 10), ("A", "2", 10), ("A", "3", 14), ("A", "4", 15), ("A", "5", 20), ("A", "6", 22), ("A", "7", 30)]
EARLY_INPUT = [("A", "1", 0), ("A", "2", 5), ("A", "3", 6), ("A", "4", 3), ("A", "5", 13), ("A", "6", 10), ("A", "7", 70)]


def test_sliding_window_aggregate_test_aggregate_small_input_emit_final():
    """KStreamSlidingWindowAggregateTest.testAggregateSmallInput, ON_WINDOW_CLOSE"""
    assert run_final(SlidingWindows.of_time_difference_and_grace(10, 5), SMALL_INPUT) == {
        0: {("0+1+2", 10)},
        4: {("0+1+2+3", 14)},
        5: {("0+1+2+3+4", 15)},
        10: {("0+1+2+3+4+5", 20)},
        11: {("0+3+4+5", 20)},
        12: {("0+3+4+5+6", 22)},
    }


def test_sliding_window_aggregate_test_reduce_small_input_emit_final():
    """KStreamSlidingWindowAggregateTest.testReduceSmallInput, ON_WINDOW_CLOSE"""
    records = [("A", "1", 10), ("A", "2", 14), ("A", "3", 15), ("A", "4", 22), ("A", "5", 26), ("A", "6", 30)]
    assert run_final(SlidingWindows.of_time_difference_and_grace(10, 5), records, reduce=True) == {
        0: {("1", 10)},
        4: {("1+2", 14)},
        5: {("1+2+3", 15)},
        11: {("2+3", 15)},
        12: {("2+3+4", 22)},
    }


EARLY_FINAL = {
    0: {("0+1+2+3+4+5+6", 13)},
    1: {("0+2+3+4+5+6", 13)},
    4: {("0+2+3+5+6", 13)},
    6: {("0+3+5+6", 13)},
    7: {("0+5+6", 13)},
    11: {("0+5", 13)},
}


def test_sliding_window_aggregate_test_early_records_small_input_emit_final():
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput, ON_WINDOW_CLOSE"""
    assert run_final(SlidingWindows.of_time_difference_and_grace(50, 0), EARLY_INPUT) == EARLY_FINAL


def test_sliding_window_aggregate_test_early_no_grace_period_small_input_emit_final():
    """KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodSmallInput, ON_WINDOW_CLOSE"""
    records = EARLY_INPUT[:-1] + [("A", "6", 70)]
    assert run_final(SlidingWindows.of_time_difference_without_grace(50), records) == EARLY_FINAL


def test_sliding_window_aggregate_test_early_records_repeated_input_emit_final():
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsRepeatedInput, ON_WINDOW_CLOSE"""
    records = [("A", "1", 0), ("A", "2", 2), ("A", "3", 4), ("A", "4", 0), ("A", "5", 2), ("A", "6", 2), ("A", "7", 0), ("A", "8", 7)]
    assert run_final(SlidingWindows.of_time_difference_and_grace(5, 0), records) == {
        0: {("0+1+2+3+4+5+6+7", 4)},
        1: {("0+2+3+5+6", 4)},
    }


def test_sliding_window_aggregate_test_no_grace_period_small_input_emit_final():
    """KStreamSlidingWindowAggregateTest.testNoGracePeriodSmallInput, ON_WINDOW_CLOSE"""
    records = [("A", "1", 100), ("A", "2", 105), ("A", "3", 106), ("A", "4", 103), ("A", "5", 113), ("A", "6", 110)]
    assert run_final(SlidingWindows.of_time_difference_without_grace(50), records) == {
        50: {("0+1", 100)},
        55: {("0+1+2", 105)},
        56: {("0+1+2+3+4", 106)},
    }


def test_sliding_window_final_results_go_out_by_window_start_then_key():
    """Kafka's time-ordered window store returns closed windows by start, then key: a key's
    later window goes out after another key's earlier one."""
    records = [("b", "1", 10), ("a", "2", 15), ("c", "3", 100)]
    builder = StreamsBuilder()
    builder.stream("topic").group_by_key().windowed_by(SlidingWindows.of_time_difference_without_grace(10)).emit_strategy(
        EmitStrategy.on_window_close()).count().to_stream().to("out")
    driver = TopologyTestDriver(builder.build())
    for key, value, timestamp in records:
        driver.pipe_input("topic", key, value, timestamp)
    assert [(r.key, r.window_start, r.window_end, r.value) for r in driver.read_output("out")] == [("b", 0, 10, 1), ("a", 5, 15, 1)]
