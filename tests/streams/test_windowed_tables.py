"""Tables of windowed aggregations (Kafka's ``KTable<Windowed<K>, V>``) joined with each other,
with their own stream, and re-grouped, on the test driver; and the joins Kafka's types refuse,
refused at build time. Kafka reads a windowed table by key the way its value getter does
(``KStreamWindowAggregateValueGetter``: ``windowStore.fetch(key, window.start())``), so two
windowed tables meet on the same key and the same window start."""

from __future__ import annotations

import pytest

from deltastreams.conf.errors import TopologyError
from deltastreams.streams import SessionWindows, StreamsBuilder, TimeWindows, TopologyTestDriver

WINDOWS = TimeWindows.of_size_and_grace(10, 100)


def _latest_or_delete(_aggregate, value):
    """A reduce whose ``"del"`` deletes the window's row (a tombstone on the table)."""
    return None if value == "del" else value


def joined_tables(kind: str):
    builder = StreamsBuilder()
    clicks = builder.stream("clicks").group_by_key().windowed_by(WINDOWS).reduce(_latest_or_delete, name="clicks-w")
    views = builder.stream("views").group_by_key().windowed_by(WINDOWS).reduce(_latest_or_delete, name="views-w")
    getattr(clicks, kind)(views, lambda c, v: f"{c}/{v}").to_stream().to("joined")
    return builder.build()


# Records in two windows of "a" ([0, 10) and [10, 20)) and one of "b"; "del" deletes a row.
RECORDS = [
    ("clicks", "a", "c1", 1),
    ("views", "a", "v1", 2),
    ("views", "a", "v2", 12),  # another window: meets no click
    ("clicks", "b", "c2", 3),
    ("clicks", "a", "del", 4),  # left row of window 0 deleted
    ("views", "a", "del", 5),  # right row of window 0 deleted too
    ("clicks", "a", "c3", 13),
]

# (key, window start, value, timestamp) per kind: Kafka's KTableKTable{Inner,Left,Outer}Join
# forwarding without a downstream store (a delete is forwarded whenever the join had or may have
# had a row); a joined row's timestamp is the later of the two rows'.
EXPECTED = {
    "join": [
        ("a", 0, "c1/v1", 2),
        ("a", 0, None, 4),
        ("a", 10, "c3/v2", 13),
    ],
    "left_join": [
        ("a", 0, "c1/None", 1),
        ("a", 0, "c1/v1", 2),
        ("b", 0, "c2/None", 3),
        ("a", 0, None, 4),
        ("a", 10, "c3/v2", 13),
    ],
    "outer_join": [
        ("a", 0, "c1/None", 1),
        ("a", 0, "c1/v1", 2),
        ("a", 10, "None/v2", 12),
        ("b", 0, "c2/None", 3),
        ("a", 0, "None/v1", 4),
        ("a", 0, None, 5),
        ("a", 10, "c3/v2", 13),
    ],
}


def rows(driver, topic):
    out = driver.read_output(topic)
    assert all(r.window_end == r.window_start + 10 for r in out)
    return [(r.key, r.window_start, r.value, r.timestamp) for r in out]


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_windowed_tables_join_on_key_and_window_with_deletes(kind):
    driver = TopologyTestDriver(joined_tables(kind), {"caching": False}, store_backend="rocksdb")
    for i, record in enumerate(RECORDS):
        driver.pipe_input(*record)
        if i == 3:
            driver.restart()  # the join reads both windowed stores as restored from their changelogs
    assert rows(driver, "joined") == EXPECTED[kind]


def test_windowed_tables_that_differ_in_size_meet_on_the_window_start_as_in_kafka():
    builder = StreamsBuilder()
    small = builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 100)).count()
    large = builder.stream("views").group_by_key().windowed_by(TimeWindows.of_size_and_grace(20, 100)).count()
    small.join(large, lambda c, v: f"{c},{v}").to_stream().to("joined")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("views", "a", "v", timestamp=15)  # large window [0, 20)
    driver.pipe_input("clicks", "a", "c", timestamp=12)  # small window [10, 20): another start
    driver.pipe_input("clicks", "a", "c", timestamp=5)  # small window [0, 10): start 0, as the large one
    assert [(r.key, r.window_start, r.window_end, r.value) for r in driver.read_output("joined")] == [("a", 0, 10, "1,1")]


def test_regrouping_a_windowed_table_by_its_key_subtracts_each_windows_old_count():
    builder = StreamsBuilder()
    counts = builder.stream("clicks").group_by_key().windowed_by(WINDOWS).count(name="per-window")
    # Windows per user holding at least two clicks: a window's old count leaves, its new one joins.
    busy = counts.filter(lambda wk, c: c >= 2)
    busy.group_by(lambda wk, c: (wk.key, wk.window_start), name="by-user").count(name="busy-windows").to_stream().to("busy")
    counts.group_by(lambda wk, c: (wk.key, c), name="by-user-sum").reduce(lambda a, v: a + v, lambda a, v: a - v, name="clicks").to_stream().to("total")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for user, t in [("a", 1), ("a", 2), ("a", 3), ("a", 11), ("b", 4), ("a", 12)]:
        driver.pipe_input("clicks", user, "x", timestamp=t)
    assert [(r.key, r.value, r.timestamp, r.window_start) for r in driver.read_output("busy")] == [
        ("a", 1, 2, None),
        ("a", 1, 3, None),  # window 0 went from 2 to 3 clicks: it left and rejoined its group
        ("a", 2, 12, None),
    ]
    # Each update subtracts the window's old count and adds its new one: the running total of clicks.
    assert [(r.key, r.value) for r in driver.read_output("total")] == [("a", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 1), ("a", 5)]
    assert driver.get_key_value_store("clicks").get("a") == 5


def test_a_windowed_tables_to_stream_after_a_join_carries_the_window_and_joins_the_table_again():
    builder = StreamsBuilder()
    clicks = builder.stream("clicks").group_by_key().windowed_by(WINDOWS).count(name="clicks-w")
    views = builder.stream("views").group_by_key().windowed_by(WINDOWS).count(name="views-w")
    ratio = clicks.join(views, lambda c, v: c / v).map_values(lambda r: round(r, 2))
    ratio.to_stream().filter(lambda wk, r: r >= 1).to("ratios")
    # A stream of Windowed keys joins a windowed table (Kafka: KStream<Windowed<K>, V>.join(KTable<Windowed<K>, V>)).
    clicks.to_stream().left_join(views, lambda c, v: f"{c},{v}").to("clicks-with-views")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("views", "a", "v", timestamp=1)
    driver.pipe_input("clicks", "a", "c", timestamp=2)
    driver.pipe_input("clicks", "a", "c", timestamp=3)
    driver.pipe_input("clicks", "a", "c", timestamp=14)
    assert [(r.key, r.window_start, r.window_end, r.value) for r in driver.read_output("ratios")] == [("a", 0, 10, 1.0), ("a", 0, 10, 2.0)]
    assert [(r.key, r.window_start, r.value) for r in driver.read_output("clicks-with-views")] == [("a", 0, "1,1"), ("a", 0, "2,1"), ("a", 10, "1,None")]


def test_windowed_joins_with_caching_forward_the_last_joined_row_per_window():
    driver = TopologyTestDriver(joined_tables("outer_join"))
    driver.pipe_together([("clicks", "a", "c1", 1), ("views", "a", "v1", 2), ("clicks", "a", "c2", 3), ("views", "a", "v2", 12)])
    assert rows(driver, "joined")[-2:] == [("a", 0, "c2/v1", 3), ("a", 10, "None/v2", 12)]


def _windowed(builder):
    return builder.stream("clicks").group_by_key().windowed_by(WINDOWS).count()


@pytest.mark.parametrize(
    ("join", "message"),
    [
        (lambda b: _windowed(b).join(b.table("users"), lambda c, u: c), r"KTable.join\(\): both sides must have the same kind of key, got time-windowed"),
        (lambda b: b.table("users").left_join(_windowed(b), lambda u, c: c), r"KTable.left_join\(\): both sides must have the same kind of key, got plain keys"),
        (lambda b: b.stream("views").join(_windowed(b), lambda v, c: c), r"KStream.join\(table\): both sides must have the same kind of key"),
        (lambda b: (t := _windowed(b)).to_stream().select_key(lambda wk, c: wk.key).join(t, lambda v, c: c), "same kind of key, got plain keys"),
        (
            lambda b: _windowed(b).outer_join(b.stream("s").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5)).count(), lambda a, c: a),
            "session- or sliding-windowed table cannot be joined by key",
        ),
    ],
)
def test_joins_kafkas_types_refuse_fail_at_build_time(join, message):
    with pytest.raises(TopologyError, match=message):
        join(StreamsBuilder())


def test_a_session_windowed_table_cannot_be_regrouped_here():
    builder = StreamsBuilder()
    sessions = builder.stream("clicks").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5)).count()
    with pytest.raises(TopologyError, match=r"cannot be read by key \(joined or re-grouped\).*not session or sliding"):
        sessions.group_by(lambda wk, c: (wk.key, c))


def test_one_records_hopping_windows_leave_and_join_their_group_one_after_another():
    # Kafka puts a window and forwards its revision through the re-grouping before it puts the
    # next window of the record: each window's old value is the one before its own put.
    builder = StreamsBuilder()
    sums = builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size_and_grace(5, 0).advance_by(2)).reduce(lambda a, v: a + v)
    sums.group_by(lambda wk, v: (wk.key, v)).reduce(lambda a, v: a + v, lambda a, v: a - v).to_stream().to("totals")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("clicks", "a", 2, timestamp=47)  # windows [44, 49) and [46, 51)
    driver.pipe_input("clicks", "a", 1, timestamp=48)  # both again (2 -> 3 in each), and [48, 53)
    assert [r.value for r in driver.read_output("totals")] == [2, 4, 5, 6, 7]


def test_a_joined_windowed_table_keeps_a_closed_window_while_kafkas_window_store_returns_it():
    # Kafka's window store returns a window until its start is size + grace behind the latest
    # start written, closed by stream time or not.
    builder = StreamsBuilder()
    windows = TimeWindows.of_size_and_grace(10, 5)
    left = builder.stream("clicks").group_by_key().windowed_by(windows).count()
    right = builder.stream("views").group_by_key().windowed_by(windows).count()
    left.join(right, lambda c, v: f"{c}/{v}").to_stream().to("joined")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("views", "b", "x", timestamp=221)  # views window [220, 230)
    driver.pipe_input("views", "a", "x", timestamp=236)  # closes it (230 + 5 <= 236); latest start 230
    driver.pipe_input("clicks", "b", "x", timestamp=224)  # 220 > 230 - 15: still returned
    driver.pipe_input("views", "a", "x", timestamp=251)  # latest start 250: [220, 230) is past retention
    driver.pipe_input("clicks", "b", "x", timestamp=226)
    assert [(r.key, r.window_start, r.value) for r in driver.read_output("joined")] == [("b", 220, "1/1")]
