"""Kafka Streams' own unit-test vectors for session windows, run through our TopologyTestDriver.

From apache/kafka (commit 1eb7644349cb): ``SessionWindowedKStreamImplTest`` with the default
emit strategy (``ON_WINDOW_UPDATE``; ``ON_WINDOW_CLOSE`` further down), caching on and off
(Kafka's driver commits after every record, so both give the same records):
shouldCountSessionWindowed, shouldReduceWindowed, shouldAggregateSessionWindowed, and the
materialized stores' contents (shouldMaterializeCount / Reduced / Aggregated). The inputs are
``processData``'s: ("1","1",10), ("1","2",15), ("1","3",600), ("2","1",600), ("2","2",599), gap
500 ms, no grace. ``MockReducer.STRING_ADDER`` is ``agg + "+" + value``,
``MockAggregator.TOSTRING_ADDER`` ``agg + "+" + value``, ``MockInitializer.STRING_INIT`` ``"0"``,
the test's merger ``agg1 + "+" + agg2``.
"""

from __future__ import annotations

import pytest

from deltastreams.streams import SessionWindows, StreamsBuilder, TopologyTestDriver, Windowed


def build(aggregate, name=None):
    builder = StreamsBuilder()
    sessions = builder.stream("input").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(500))
    aggregate(sessions, name).to_stream().to("out")
    return builder.build()


def count(sessions, name):
    return sessions.count(name=name)


def reduce(sessions, name):
    return sessions.reduce(lambda agg, value: f"{agg}+{value}", name=name)


def aggregate(sessions, name):
    return sessions.aggregate(lambda: "0", lambda key, value, agg: f"{agg}+{value}", lambda key, one, two: f"{one}+{two}", name=name)


def process_data(driver):
    for key, value, timestamp in (("1", "1", 10), ("1", "2", 15), ("1", "3", 600), ("2", "1", 600), ("2", "2", 599)):
        driver.pipe_input("input", key, value, timestamp)


def processed(driver):
    return [((r.key, r.window_start, r.window_end), r.value, r.timestamp) for r in driver.read_output("out")]


EXPECTED = {
    "count": [1, None, 2, 1, 1, None, 2],
    "reduce": ["1", None, "1+2", "3", "1", None, "1+2"],
    "aggregate": ["0+1", None, "0+0+1+2", "0+3", "0+1", None, "0+0+1+2"],
}
WINDOWS = [(("1", 10, 10), 10), (("1", 10, 10), 10), (("1", 10, 15), 15), (("1", 600, 600), 600), (("2", 600, 600), 600), (("2", 600, 600), 600), (("2", 599, 600), 600)]
FUNCTIONS = {"count": count, "reduce": reduce, "aggregate": aggregate}


@pytest.mark.parametrize("caching", [False, True])
@pytest.mark.parametrize("kind", ["count", "reduce", "aggregate"])
def test_session_windowed_aggregations(kind, caching):
    """SessionWindowedKStreamImplTest.shouldCountSessionWindowedWithCachingDisabled / Enabled,
    shouldReduceWindowed, shouldAggregateSessionWindowed"""
    driver = TopologyTestDriver(build(FUNCTIONS[kind]), {"caching": caching})
    process_data(driver)
    assert processed(driver) == [(window, value, ts) for (window, ts), value in zip(WINDOWS, EXPECTED[kind], strict=True)]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("count", {"1": [((10, 15), 2), ((600, 600), 1)], "2": [((599, 600), 2)]}),
        ("reduce", {"1": [((10, 15), "1+2"), ((600, 600), "3")], "2": [((599, 600), "1+2")]}),
        ("aggregate", {"1": [((10, 15), "0+0+1+2"), ((600, 600), "0+3")], "2": [((599, 600), "0+0+1+2")]}),
    ],
)
def test_materialized_session_stores(kind, expected):
    """SessionWindowedKStreamImplTest.shouldMaterializeCount / Reduced / Aggregated.

    Kafka's expectation includes session [10, 15] of key "1", which ended before stream time
    (600) minus the store's retention (gap + grace = 500): its RocksDB session store no longer
    returns it, but the test runs with Kafka's record cache on, and the cache, which keeps flushed
    entries, still does. Our store has no such cache: an expired session is gone (as in Kafka
    with caching off); see docs/differences-from-kafka.md."""
    driver = TopologyTestDriver(build(FUNCTIONS[kind], name="store"), {"caching": False})
    process_data(driver)
    store = driver.get_session_store("store")
    for key, sessions in expected.items():
        live = [((s, e), value) for (s, e), value in sessions if e > 600 - 500]
        assert store.fetch(key) == [(Windowed(key, s, e), value) for (s, e), value in live]


GAP_MS = 5 * 60 * 1000


def counting(windows):
    builder = StreamsBuilder()
    builder.stream("input").group_by_key().windowed_by(windows).count(name="sessions").to_stream().to("out")
    return builder.build()


def test_session_window_aggregate_processor_should_handle_multiple_sessions_and_merging():
    """KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging: a cached
    store flushed once, so one commit (one batch) with caching on."""
    driver = TopologyTestDriver(counting(SessionWindows.of_inactivity_gap_with_no_grace(GAP_MS)), {"caching": True})
    half = GAP_MS // 2
    driver.pipe_batch(
        "input",
        [("a", "1", 0), ("b", "1", 0), ("c", "1", 0), ("d", "1", 0), ("d", "2", half), ("a", "2", GAP_MS + 1),
         ("b", "2", GAP_MS + 1), ("a", "3", GAP_MS + 1 + half), ("c", "3", GAP_MS + 1 + half)],
    )
    assert processed(driver) == [
        (("a", 0, 0), 1, 0),
        (("b", 0, 0), 1, 0),
        (("c", 0, 0), 1, 0),
        (("d", 0, half), 2, half),
        (("b", GAP_MS + 1, GAP_MS + 1), 1, GAP_MS + 1),
        (("a", GAP_MS + 1, GAP_MS + 1 + half), 2, GAP_MS + 1 + half),
        (("c", GAP_MS + 1 + half, GAP_MS + 1 + half), 1, GAP_MS + 1 + half),
    ]


def test_session_window_aggregate_processor_should_skip_late_record_with_nonzero_grace():
    """KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace:
    gap 10, grace 1; at stream time 11 a record at 0 still counts, at 12 it is dropped."""
    driver = TopologyTestDriver(counting(SessionWindows.of_inactivity_gap_and_grace(10, 1)), {"caching": False})
    for key, timestamp in (("dummy", 0), ("OnTime1", 0), ("dummy", 11), ("OnTime2", 0), ("dummy", 12), ("Late1", 0)):
        driver.pipe_input("input", key, "1", timestamp)
    keys = [window[0] for window, _, _ in processed(driver)]
    assert "OnTime2" in keys and "Late1" not in keys
    assert driver.dropped_records == 1


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("count", 2), ("reduce", "1+2"), ("aggregate", "0+0+1+2")],
)
@pytest.mark.parametrize("caching", [False, True])
def test_session_windowed_aggregations_emit_final(kind, expected, caching):
    """SessionWindowedKStreamImplTest.shouldCountSessionWindowed / shouldReduceWindowed /
    shouldAggregateSessionWindowed with EmitStrategy ON_WINDOW_CLOSE: one final result"""
    from deltastreams.streams import EmitStrategy

    builder = StreamsBuilder()
    sessions = builder.stream("input").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(500))
    FUNCTIONS[kind](sessions.emit_strategy(EmitStrategy.on_window_close()), None).to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": caching})
    process_data(driver)
    assert processed(driver) == [(("1", 10, 15), expected, 15)]
