"""Kafka Streams' own vectors for time-windowed aggregations with ``EmitStrategy``, run through
our TopologyTestDriver: ``TimeWindowedKStreamImplTest`` (commit 1eb7644349cb)
shouldCountWindowed, shouldReduceWindowed and shouldAggregateWindowed, for both strategies and
caching on and off (Kafka's driver commits after every record, so caching changes nothing).
Input (``processData``): ("1","1",10), ("1","2",15), ("1","3",500), ("2","10",550),
("2","20",500), ("2","30",1000); tumbling windows of 500 ms, no grace."""

from __future__ import annotations

import pytest

from deltastreams.streams import EmitStrategy, StreamsBuilder, TimeWindows, TopologyTestDriver

KEY_1_WINDOW_0, KEY_1_WINDOW_1 = ("1", 0, 500), ("1", 500, 1000)
KEY_2_WINDOW_1, KEY_2_WINDOW_2 = ("2", 500, 1000), ("2", 1000, 1500)


def aggregations():
    return {
        "count": lambda windowed: windowed.count(),
        "reduce": lambda windowed: windowed.reduce(lambda agg, value: f"{agg}+{value}"),
        "aggregate": lambda windowed: windowed.aggregate(lambda: "0", lambda key, value, agg: f"{agg}+{value}"),
    }


EXPECTED = {
    ("count", False): [(KEY_1_WINDOW_0, 1, 10), (KEY_1_WINDOW_0, 2, 15), (KEY_1_WINDOW_1, 1, 500), (KEY_2_WINDOW_1, 1, 550), (KEY_2_WINDOW_1, 2, 550), (KEY_2_WINDOW_2, 1, 1000)],
    ("count", True): [(KEY_1_WINDOW_0, 2, 15), (KEY_1_WINDOW_1, 1, 500), (KEY_2_WINDOW_1, 2, 550)],
    ("reduce", False): [(KEY_1_WINDOW_0, "1", 10), (KEY_1_WINDOW_0, "1+2", 15), (KEY_1_WINDOW_1, "3", 500), (KEY_2_WINDOW_1, "10", 550), (KEY_2_WINDOW_1, "10+20", 550), (KEY_2_WINDOW_2, "30", 1000)],
    ("reduce", True): [(KEY_1_WINDOW_0, "1+2", 15), (KEY_1_WINDOW_1, "3", 500), (KEY_2_WINDOW_1, "10+20", 550)],
    ("aggregate", False): [(KEY_1_WINDOW_0, "0+1", 10), (KEY_1_WINDOW_0, "0+1+2", 15), (KEY_1_WINDOW_1, "0+3", 500), (KEY_2_WINDOW_1, "0+10", 550), (KEY_2_WINDOW_1, "0+10+20", 550), (KEY_2_WINDOW_2, "0+30", 1000)],
    ("aggregate", True): [(KEY_1_WINDOW_0, "0+1+2", 15), (KEY_1_WINDOW_1, "0+3", 500), (KEY_2_WINDOW_1, "0+10+20", 550)],
}


@pytest.mark.parametrize("caching", [True, False])
@pytest.mark.parametrize("final", [False, True])
@pytest.mark.parametrize("kind", ["count", "reduce", "aggregate"])
def test_time_windowed_kstream_impl_test(kind, final, caching):
    """TimeWindowedKStreamImplTest.shouldCountWindowed / shouldReduceWindowed / shouldAggregateWindowed"""
    builder = StreamsBuilder()
    strategy = EmitStrategy.on_window_close() if final else EmitStrategy.on_window_update()
    windowed = builder.stream("input").group_by_key().windowed_by(TimeWindows.of_size(500)).emit_strategy(strategy)
    aggregations()[kind](windowed).to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": caching})
    for key, value, timestamp in (("1", "1", 10), ("1", "2", 15), ("1", "3", 500), ("2", "10", 550), ("2", "20", 500), ("2", "30", 1000)):
        driver.pipe_input("input", key, value, timestamp)
    processed = [((r.key, r.window_start, r.window_end), r.value, r.timestamp) for r in driver.read_output("out")]
    assert processed == EXPECTED[(kind, final)]


def test_final_results_go_out_by_window_start_then_key():
    """Kafka's emit-final reads its time-ordered window store (time first, then key): windows
    closed together go out by start, then key, so key "b"'s earlier window precedes key "a"'s."""
    builder = StreamsBuilder()
    windowed = builder.stream("topic").group_by_key().windowed_by(TimeWindows.of_size_and_grace(500, 1000))
    windowed.emit_strategy(EmitStrategy.on_window_close()).count().to_stream().to("out")
    driver = TopologyTestDriver(builder.build())
    for key, value, timestamp in [("b", "1", 10), ("a", "2", 600), ("c", "3", 5000)]:
        driver.pipe_input("topic", key, value, timestamp)
    assert [(r.key, r.window_start, r.value) for r in driver.read_output("out")] == [("b", 0, 1), ("a", 500, 1)]
