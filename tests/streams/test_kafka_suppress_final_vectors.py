"""Kafka Streams' own scenarios for ``suppress(untilWindowCloses(unbounded()))``, run through our
TopologyTestDriver: ``SuppressScenarioTest`` shouldSupportFinalResultsForTimeWindows,
...ForTimeWindowsWithLargeJump, ...ForSlidingWindows and ...ForSessionWindows. Each counts
records per key (through a key-changing ``group_by``, so a repartition topic) per window, and
writes the raw and the suppressed updates; Kafka prints a windowed key as ``[key@start/end]``."""

from __future__ import annotations

import random

import pytest

from deltastreams.streams import SessionWindows, SlidingWindows, StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver


def driver_for(windows, store_backend="memory"):
    builder = StreamsBuilder()
    counts = builder.stream("input").group_by(lambda k, v: k).windowed_by(windows).count(name="counts")
    counts.suppress(Suppressed.until_window_closes()).to_stream().to("output-suppressed")
    counts.to_stream().to("output-raw")
    return TopologyTestDriver(builder.build(), {"caching": False}, store_backend=store_backend)


def pipe(driver, records):
    for key, ts in records:
        driver.pipe_input("input", key, "v1", ts)


def drain(driver, topic):
    return [(f"[{r.key}@{r.window_start}/{r.window_end}]", r.value, r.timestamp) for r in driver.read_output(topic)]


def test_suppress_scenario_should_support_final_results_for_time_windows():
    """SuppressScenarioTest.shouldSupportFinalResultsForTimeWindows"""
    driver = driver_for(TimeWindows.of_size_and_grace(2, 1))
    pipe(driver, [("k1", 0), ("k1", 1), ("k1", 2), ("k1", 1), ("k1", 0), ("k1", 5), ("k1", 0)])
    assert drain(driver, "output-raw") == [
        ("[k1@0/2]", 1, 0), ("[k1@0/2]", 2, 1), ("[k1@2/4]", 1, 2), ("[k1@0/2]", 3, 1), ("[k1@0/2]", 4, 1), ("[k1@4/6]", 1, 5),
    ]
    assert drain(driver, "output-suppressed") == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 1, 2)]


def test_suppress_scenario_should_support_final_results_for_time_windows_with_large_jump():
    """SuppressScenarioTest.shouldSupportFinalResultsForTimeWindowsWithLargeJump"""
    driver = driver_for(TimeWindows.of_size_and_grace(2, 2))
    pipe(driver, [("k1", 0), ("k1", 1), ("k1", 2), ("k1", 0), ("k1", 3), ("k1", 0), ("k1", 4), ("k1", 0), ("k1", 30)])
    assert drain(driver, "output-raw") == [
        ("[k1@0/2]", 1, 0), ("[k1@0/2]", 2, 1), ("[k1@2/4]", 1, 2), ("[k1@0/2]", 3, 1), ("[k1@2/4]", 2, 3),
        ("[k1@0/2]", 4, 1), ("[k1@4/6]", 1, 4), ("[k1@30/32]", 1, 30),
    ]
    assert drain(driver, "output-suppressed") == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 2, 3), ("[k1@4/6]", 1, 4)]


def test_suppress_scenario_should_support_final_results_for_sliding_windows():
    """SuppressScenarioTest.shouldSupportFinalResultsForSlidingWindows (Kafka sorts the raw output
    by key, then timestamp, before comparing: its order depends on the store's iterator)"""
    driver = driver_for(SlidingWindows.of_time_difference_and_grace(5, 15))
    pipe(driver, [("k1", 10), ("k1", 11), ("k1", 10), ("k1", 13), ("k1", 10), ("k1", 24), ("k1", 5), ("k1", 7), ("k1", 90)])
    raw = sorted(drain(driver, "output-raw"), key=lambda r: (r[0], r[2]))
    assert raw == [
        ("[k1@11/16]", 1, 11), ("[k1@11/16]", 2, 13), ("[k1@12/17]", 1, 13), ("[k1@19/24]", 1, 24),
        ("[k1@5/10]", 1, 10), ("[k1@5/10]", 2, 10), ("[k1@5/10]", 3, 10), ("[k1@5/10]", 4, 10), ("[k1@5/10]", 5, 10),
        ("[k1@6/11]", 2, 11), ("[k1@6/11]", 3, 11), ("[k1@6/11]", 4, 11), ("[k1@6/11]", 5, 11),
        ("[k1@8/13]", 4, 13), ("[k1@8/13]", 5, 13), ("[k1@85/90]", 1, 90),
    ]
    assert drain(driver, "output-suppressed") == [
        ("[k1@5/10]", 5, 10), ("[k1@6/11]", 5, 11), ("[k1@8/13]", 5, 13), ("[k1@11/16]", 2, 13), ("[k1@12/17]", 1, 13), ("[k1@19/24]", 1, 24),
    ]


def test_suppress_scenario_should_support_final_results_for_session_windows():
    """SuppressScenarioTest.shouldSupportFinalResultsForSessionWindows: the deletes of merged
    sessions are buffered and never emitted; a session goes out once stream time is gap + grace
    past its end"""
    driver = driver_for(SessionWindows.of_inactivity_gap_with_no_grace(5))
    pipe(driver, [("k1", 0), ("k1", 5), ("k1", 1), ("k2", 11), ("k1", 5), ("k1", 30)])
    assert drain(driver, "output-raw") == [
        ("[k1@0/0]", 1, 0), ("[k1@0/0]", None, 0), ("[k1@0/5]", 2, 5), ("[k1@0/5]", None, 5), ("[k1@0/5]", 3, 5),
        ("[k2@11/11]", 1, 11), ("[k1@30/30]", 1, 30),
    ]
    assert drain(driver, "output-suppressed") == [("[k1@0/5]", 3, 5), ("[k2@11/11]", 1, 11)]


@pytest.mark.parametrize("windows", [SessionWindows.of_inactivity_gap_and_grace(20, 30), SlidingWindows.of_time_difference_and_grace(40, 60)], ids=["session", "sliding"])
@pytest.mark.parametrize("seed", [1, 2])
def test_batches_and_restarts_do_not_change_the_final_results(windows, seed):
    """Suppress decides record by record, so a task committing many records per batch (and
    restarting from its changelog) emits what one committing every record does."""
    rng = random.Random(seed)
    records, clock = [], 0
    for _ in range(300):
        clock += rng.randrange(0, 15)
        records.append((f"k{rng.randrange(3)}", max(0, clock - rng.randrange(0, 80))))
    one_by_one = driver_for(windows)
    pipe(one_by_one, records)
    expected = drain(one_by_one, "output-suppressed")
    assert len(expected) > 10
    batched = driver_for(windows, store_backend="rocksdb")
    actual, i = [], 0
    while i < len(records):
        size = rng.randrange(1, 40)
        batched.pipe_batch("input", [(k, "v1", t) for k, t in records[i : i + size]])
        if rng.random() < 0.3:
            batched.restart()
        actual += drain(batched, "output-suppressed")
        i += size
    assert actual == expected
