"""Kafka Streams' own scenarios for ``suppress(untilTimeLimit(...))``, run through our
TopologyTestDriver: ``SuppressScenarioTest`` (commit 1eb7644349cb)
shouldImmediatelyEmitEventsWithZeroEmitAfter, shouldSuppressIntermediateEventsWithTimeLimit and
shouldSuppressIntermediateEventsWithRecordLimit. Each counts a table's values (users per value,
through ``group_by``) and writes the raw and the suppressed updates. The bytes-limit scenario is
not reproduced: its bound is in Kafka's serialized bytes, ours counts pickled entries."""

from __future__ import annotations

import pytest

from deltastreams.conf.errors import ProcessingError
from deltastreams.streams import BufferConfig, StreamsBuilder, Suppressed, TopologyTestDriver


def driver_for(suppressed):
    builder = StreamsBuilder()
    counts = builder.table("input").group_by(lambda k, v: (v, k)).count()
    counts.suppress(suppressed).to_stream().to("output-suppressed")
    counts.to_stream().to("output-raw")
    return TopologyTestDriver(builder.build(), {"caching": False})


def drain(driver, topic):
    return [(r.key, r.value, r.timestamp) for r in driver.read_output(topic)]


RAW = [("v1", 1, 0), ("v1", 0, 1), ("v2", 1, 1), ("v1", 1, 2)]


def pipe_first_three(driver):
    for key, value, ts in (("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2)):
        driver.pipe_input("input", key, value, ts)


def test_suppress_scenario_should_immediately_emit_events_with_zero_emit_after():
    """SuppressScenarioTest.shouldImmediatelyEmitEventsWithZeroEmitAfter"""
    driver = driver_for(Suppressed.until_time_limit(0, BufferConfig.unbounded()))
    pipe_first_three(driver)
    assert drain(driver, "output-raw") == RAW
    assert drain(driver, "output-suppressed") == RAW
    driver.pipe_input("input", "x", "x", 3)
    assert drain(driver, "output-raw") == [("x", 1, 3)]
    assert drain(driver, "output-suppressed") == [("x", 1, 3)]
    driver.pipe_input("input", "x", "y", 4)
    assert drain(driver, "output-raw") == [("x", 0, 4), ("y", 1, 4)]
    assert drain(driver, "output-suppressed") == [("x", 0, 4), ("y", 1, 4)]


def test_suppress_scenario_should_suppress_intermediate_events_with_time_limit():
    """SuppressScenarioTest.shouldSuppressIntermediateEventsWithTimeLimit"""
    driver = driver_for(Suppressed.until_time_limit(2, BufferConfig.unbounded()))
    pipe_first_three(driver)
    assert drain(driver, "output-raw") == RAW
    assert drain(driver, "output-suppressed") == [("v1", 1, 2)]
    driver.pipe_input("input", "tick", "tick", 3)  # a dummy record just to advance stream time
    assert drain(driver, "output-raw") == [("tick", 1, 3)]
    assert drain(driver, "output-suppressed") == [("v2", 1, 1)]  # stream time 3: v2 is due
    driver.pipe_input("input", "tick", "tock", 4)
    assert drain(driver, "output-raw") == [("tick", 0, 4), ("tock", 1, 4)]
    assert drain(driver, "output-suppressed") == []  # tick was first buffered at 3


def test_suppress_scenario_should_suppress_intermediate_events_with_record_limit():
    """SuppressScenarioTest.shouldSuppressIntermediateEventsWithRecordLimit"""
    driver = driver_for(Suppressed.until_time_limit(2**63 - 1, BufferConfig.max_records(1).emit_early_when_full()))
    pipe_first_three(driver)
    assert drain(driver, "output-raw") == RAW
    assert drain(driver, "output-suppressed") == [("v1", 0, 1), ("v2", 1, 1)]  # consecutive v1 updates collapse
    driver.pipe_input("input", "x", "x", 3)
    assert drain(driver, "output-raw") == [("x", 1, 3)]
    assert drain(driver, "output-suppressed") == [("v1", 1, 2)]  # x waits until it is evicted


def test_a_full_buffer_that_must_shut_down_fails_the_batch_with_a_clear_error():
    driver = driver_for(Suppressed.until_time_limit(1000, BufferConfig.max_records(1).shut_down_when_full()))
    driver.pipe_input("input", "k1", "v1", 0)
    with pytest.raises(ProcessingError, match="buffer exceeded its max capacity"):
        driver.pipe_input("input", "k2", "v2", 1)


def test_buffer_bounds_are_checked():
    from deltastreams.conf.errors import TopologyError

    with pytest.raises(TopologyError, match="non-negative int"):
        BufferConfig.max_records(-1)


@pytest.mark.parametrize("buffer", [BufferConfig.unbounded(), BufferConfig.max_records(3), BufferConfig.max_bytes(400)])
def test_batches_and_restarts_do_not_change_what_a_time_limit_lets_through(buffer):
    import random

    rng = random.Random(7)
    records = [(f"u{rng.randrange(8)}", f"v{rng.randrange(4)}", i * 3 + rng.randrange(3)) for i in range(300)]

    def build():
        builder = StreamsBuilder()
        builder.table("input").group_by(lambda k, v: (v, k)).count().suppress(Suppressed.until_time_limit(20, buffer)).to_stream().to("out")
        return builder.build()

    one_by_one = TopologyTestDriver(build(), {"caching": False})
    for record in records:
        one_by_one.pipe_input("input", *record)
    batched = TopologyTestDriver(build(), {"caching": False}, store_backend="rocksdb")
    i = 0
    while i < len(records):
        size = rng.randrange(1, 30)
        batched.pipe_batch("input", records[i : i + size])
        if rng.random() < 0.3:
            batched.restart()
        i += size
    expected = drain(one_by_one, "out")
    assert len(expected) > 30
    assert drain(batched, "out") == expected


def test_final_results_with_a_bounded_buffer_fail_when_it_fills_and_never_emit_early():
    from deltastreams.conf.errors import TopologyError
    from deltastreams.streams import TimeWindows

    with pytest.raises(TopologyError, match="cannot be emitted early"):
        Suppressed.until_window_closes(BufferConfig.max_records(2))

    def driver(bound):
        builder = StreamsBuilder()
        (builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size(10)).count()
         .suppress(Suppressed.until_window_closes(BufferConfig.max_records(bound).shut_down_when_full())).to_stream().to("out"))
        return TopologyTestDriver(builder.build(), {"caching": False})

    roomy = driver(3)
    for key, ts in (("a", 1), ("b", 2), ("c", 3), ("a", 12), ("d", 13)):  # at 12 the first window closes
        roomy.pipe_input("in", key, "x", ts)
    assert [(r.key, r.window_start, r.value) for r in roomy.read_output("out")] == [("a", 0, 1), ("b", 0, 1), ("c", 0, 1)]
    tight = driver(2)
    tight.pipe_input("in", "a", "x", 1)
    tight.pipe_input("in", "b", "x", 2)
    with pytest.raises(ProcessingError, match="buffer exceeded its max capacity"):
        tight.pipe_input("in", "c", "x", 3)
