"""Idle close (``idle_close_ms``, beyond Kafka): a task that has seen no record for that long
moves its stream time with the wall clock, so the last window, session or suppressed result of a
quiet partition is emitted without waiting for a new record; what arrives afterwards is judged
against that stream time, as Kafka judges records behind stream time."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import ConfigError
from deltastreams.streams import (
    BufferConfig,
    EmitStrategy,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    TopologyTestDriver,
)
from deltastreams.streams._internal.processing.aggregate import AggregateOperator
from deltastreams.streams._internal.runtime.idle import IdleClock

SIZE, GRACE, IDLE = 1000, 200, 5000


def windowed(kind: str, windows=TimeWindows.of_size(SIZE).grace(GRACE)):
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    if kind == "emit-final":
        grouped.windowed_by(windows).emit_strategy(EmitStrategy.on_window_close()).count(name="counts").to_stream().to("out")
    elif kind == "suppress":
        grouped.windowed_by(windows).count(name="counts").suppress(Suppressed.until_window_closes()).to_stream().to("out")
    elif kind == "sliding":
        sliding = SlidingWindows.of_time_difference_and_grace(SIZE, GRACE)
        grouped.windowed_by(sliding).emit_strategy(EmitStrategy.on_window_close()).count(name="counts").to_stream().to("out")
    elif kind == "session-suppress":
        sessions = SessionWindows.of_inactivity_gap_and_grace(500, 100)
        grouped.windowed_by(sessions).count(name="counts").suppress(Suppressed.until_window_closes()).to_stream().to("out")
    else:
        sessions = SessionWindows.of_inactivity_gap_and_grace(500, 100)
        grouped.windowed_by(sessions).emit_strategy(EmitStrategy.on_window_close()).count(name="counts").to_stream().to("out")
    return builder.build()


def read(driver):
    return [(r.key, r.window_start, r.window_end, r.value) for r in driver.read_output("out")]


# -- configuration ------------------------------------------------------------------------------


def test_idle_close_is_off_by_default_and_minus_one_turns_it_off():
    assert StreamsConfig.load({"application_id": "app"}).idle_close is None
    assert StreamsConfig.load({"application_id": "app", "idle_close_ms": -1}).idle_close_ms is None
    assert StreamsConfig.load({"application_id": "app", "idle_close_ms": "2500"}).idle_close == timedelta(milliseconds=2500)


@pytest.mark.parametrize("value", [0, -5, "soon", 1.5, True])
def test_a_bad_idle_close_is_refused_naming_the_setting(value):
    with pytest.raises(ConfigError, match="idle_close_ms must be") as info:
        StreamsConfig.load({"application_id": "app", "idle_close_ms": value})
    assert info.value.setting == "idle_close_ms"


def test_a_non_positive_idle_close_is_refused_in_python_too():
    with pytest.raises(ConfigError, match="idle_close_ms must be positive"):
        StreamsConfig(application_id="app", idle_close=timedelta(0))


# -- the last result of a quiet partition -------------------------------------------------------


@pytest.mark.parametrize("kind", ["emit-final", "suppress"])
def test_the_last_window_is_emitted_after_idle_wall_clock_time_and_not_before(kind):
    driver = TopologyTestDriver(windowed(kind), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 100)
    driver.pipe_input("in", "b", "x", 700)
    driver.pipe_input("in", "a", "x", 1300)  # closes nothing yet: [0, 1000) closes at 1200
    driver.pipe_input("in", "a", "x", 1250)  # closes [0, 1000) (stream time 1300 >= 1200)
    assert read(driver) == [("a", 0, 1000, 1), ("b", 0, 1000, 1)]
    driver.advance_wall_clock(IDLE - 1)
    assert read(driver) == []
    driver.advance_wall_clock(1)
    assert read(driver) == [("a", 1000, 2000, 2)]
    driver.advance_wall_clock(10 * IDLE)
    assert read(driver) == []


@pytest.mark.parametrize("kind", ["emit-final", "suppress"])
def test_without_idle_close_the_last_window_waits_for_a_record_as_in_kafka(kind):
    driver = TopologyTestDriver(windowed(kind))
    driver.pipe_input("in", "a", "x", 100)
    driver.advance_wall_clock(10 * IDLE)
    assert read(driver) == []
    driver.pipe_input("in", "b", "x", 1200)
    assert read(driver) == [("a", 0, 1000, 1)]


@pytest.mark.parametrize("kind", ["emit-final", "suppress"])
def test_stream_time_follows_the_wall_clock_so_a_long_grace_is_waited_out(kind):
    # Idle for IDLE ms, stream time moves by the wall-clock time since the last record: the
    # window closes when steady traffic would have closed it (end + grace), not earlier.
    grace = 3 * IDLE
    driver = TopologyTestDriver(windowed(kind, TimeWindows.of_size(SIZE).grace(grace)), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 400)
    driver.advance_wall_clock(SIZE + grace - 400 - 1)
    assert read(driver) == []
    driver.advance_wall_clock(1)
    assert read(driver) == [("a", 0, 1000, 1)]


@pytest.mark.parametrize("kind", ["emit-final", "suppress"])
def test_a_record_within_grace_before_the_idle_close_still_counts_and_one_after_is_late(kind):
    grace = 2000
    driver = TopologyTestDriver(windowed(kind, TimeWindows.of_size(SIZE).grace(grace)), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 100)
    driver.advance_wall_clock(IDLE - 1)  # idle, but not yet for idle_close_ms
    driver.pipe_input("in", "a", "x", 200)  # on time: counted, and the idle wait starts again
    driver.advance_wall_clock(IDLE - 1)
    assert read(driver) == []
    driver.advance_wall_clock(1)  # stream time 200 + IDLE >= 1000 + grace: [0, 1000) closes
    assert read(driver) == [("a", 0, 1000, 2)]
    dropped = driver.dropped_records
    driver.pipe_input("in", "a", "x", 300)  # behind the closed window: late, dropped, counted
    driver.advance_wall_clock(10 * IDLE)
    assert read(driver) == []  # never a second result for the window
    assert driver.dropped_records == dropped + 1


def test_a_record_after_the_idle_close_opens_new_windows_normally():
    driver = TopologyTestDriver(windowed("emit-final"), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 100)
    driver.advance_wall_clock(IDLE)
    assert read(driver) == [("a", 0, 1000, 1)]
    driver.pipe_input("in", "a", "x", 100 + IDLE + 10)  # event time kept pace with the wall clock
    driver.advance_wall_clock(IDLE)
    assert read(driver) == [("a", 5000, 6000, 1)]


def test_the_last_session_is_emitted_after_idle_time_and_a_record_for_it_afterwards_is_late():
    driver = TopologyTestDriver(windowed("sessions"), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 100)
    driver.pipe_input("in", "a", "x", 300)
    driver.pipe_input("in", "b", "x", 350)
    driver.advance_wall_clock(IDLE - 1)
    assert read(driver) == []
    driver.advance_wall_clock(1)
    assert read(driver) == [("a", 100, 300, 2), ("b", 350, 350, 1)]
    dropped = driver.dropped_records
    driver.pipe_input("in", "a", "x", 310)
    driver.advance_wall_clock(10 * IDLE)
    assert read(driver) == []
    assert driver.dropped_records == dropped + 1


def test_suppress_until_time_limit_emits_the_last_update_after_idle_time():
    # Kafka's SuppressScenarioTest pipes "a dummy record just to advance stream time"; idle
    # close does it with the wall clock.
    builder = StreamsBuilder()
    counts = builder.table("input").group_by(lambda k, v: (v, k)).count()
    counts.suppress(Suppressed.until_time_limit(2000, BufferConfig.unbounded())).to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False, "idle_close_ms": 500})
    driver.pipe_input("input", "k1", "v1", 0)
    driver.pipe_input("input", "k2", "v1", 10)
    # v1's entry keeps its first update's time (0): it is due at stream time 2000, which the
    # wall clock reaches 1990 ms after the last record (stream time 10).
    driver.advance_wall_clock(1989)  # idle long enough, but short of the limit
    assert [(r.key, r.value) for r in driver.read_output("out")] == []
    driver.advance_wall_clock(1)
    assert [(r.key, r.value) for r in driver.read_output("out")] == [("v1", 2)]


def test_an_idle_task_with_nothing_open_commits_nothing():
    driver = TopologyTestDriver(windowed("emit-final"), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 100)
    driver.advance_wall_clock(IDLE)
    assert read(driver) == [("a", 0, 1000, 1)]
    entries = len(driver.changelog("counts"))
    for _ in range(5):
        driver.advance_wall_clock(IDLE)
    assert len(driver.changelog("counts")) == entries


# -- exactly once -------------------------------------------------------------------------------


def test_an_idle_advance_that_fails_before_its_commit_is_made_again_and_emits_once(monkeypatch):
    driver = TopologyTestDriver(windowed("emit-final"), {"idle_close_ms": IDLE}, store_backend="rocksdb")
    driver.pipe_input("in", "a", "x", 100)
    real, failures = AggregateOperator.advance_idle, []

    def crash_once(self, flow, by_ms, context):
        out = real(self, flow, by_ms, context)  # the windows are taken and emitted, then the task dies
        if not failures:
            failures.append(by_ms)
            raise RuntimeError("killed")
        return out

    monkeypatch.setattr(AggregateOperator, "advance_idle", crash_once)
    with pytest.raises(RuntimeError, match="killed"):
        driver.advance_wall_clock(IDLE)
    assert read(driver) == []
    driver.restart()
    driver.advance_wall_clock(0)  # still due: the failed advance was never committed
    assert read(driver) == [("a", 0, 1000, 1)]
    driver.restart()
    driver.advance_wall_clock(10 * IDLE)
    assert read(driver) == []


@pytest.mark.parametrize("kind", ["emit-final", "suppress", "sessions", "sliding"])
@pytest.mark.parametrize("seed", [1, 2])
def test_idle_close_gives_the_same_records_batched_and_restarted_each_window_once(kind, seed):
    # Records whose event time keeps pace with the wall clock, with quiet spells, some records
    # late; one run commits every record, the other commits batches and restarts at random
    # (stores rebuilt from their changelogs, idle advances included).
    rng = random.Random(seed)
    events, clock = [], 0
    for _ in range(300):
        if rng.random() < 0.08:
            pause = rng.choice([IDLE // 2, IDLE, 2 * IDLE, 4 * IDLE])
            events.append(("advance", pause))
            clock += pause
        step = rng.randrange(0, 40)
        events.append(("advance", step))
        clock += step
        batch = [(f"k{rng.randrange(4)}", 1, max(0, clock - rng.randrange(0, 1500))) for _ in range(rng.randrange(1, 4))]
        events.append(("records", batch))

    one_by_one = TopologyTestDriver(windowed(kind), {"caching": False, "idle_close_ms": IDLE})
    batched = TopologyTestDriver(windowed(kind), {"caching": True, "idle_close_ms": IDLE}, store_backend="rocksdb")
    expected, actual = [], []
    for kind_of, payload in events:
        if kind_of == "advance":
            one_by_one.advance_wall_clock(payload)
            batched.advance_wall_clock(payload)
        else:
            for record in payload:
                one_by_one.pipe_input("in", *record)
            batched.pipe_batch("in", payload)
            if rng.random() < 0.2:
                batched.restart()
        expected += read(one_by_one)
        actual += read(batched)
    one_by_one.advance_wall_clock(10 * IDLE)
    batched.restart()
    batched.advance_wall_clock(10 * IDLE)
    expected += read(one_by_one)
    actual += read(batched)
    assert actual == expected
    results = [(k, s, e) for k, s, e, _ in expected]
    assert len(results) == len(set(results)) > 20  # each window once
    assert one_by_one.dropped_records == batched.dropped_records > 0


@pytest.mark.parametrize("kind", ["sliding", "session-suppress"])
def test_sliding_final_results_and_suppressed_sessions_close_with_the_wall_clock_too(kind):
    driver = TopologyTestDriver(windowed(kind), {"idle_close_ms": IDLE})
    driver.pipe_input("in", "a", "x", 100)
    driver.pipe_input("in", "a", "x", 300)
    assert read(driver) == []
    driver.advance_wall_clock(IDLE - 1)
    assert read(driver) == []
    driver.advance_wall_clock(1)
    # sliding: the early window [0, 1000] holding both records and the first record's right
    # window [101, 1101] holding the second, as Kafka forms them; a session: [100, 300].
    emitted = read(driver)
    if kind == "sliding":
        assert emitted == [("a", 0, 1000, 2), ("a", 101, 1101, 1)]
    else:
        assert emitted == [("a", 100, 300, 2)]
    driver.advance_wall_clock(10 * IDLE)
    assert read(driver) == []


# -- when an idle task is due (the runtime's clock) ---------------------------------------------


def test_the_clock_waits_for_idleness_then_for_the_next_close_then_stops():
    clock = IdleClock(1000, ["t"], now_ms=0)
    assert clock.due(999) == {} and clock.due(1000) == {"t": 1000}  # a probe, idle_close_ms after start
    clock.committed("t", 500, processed=3, advanced=False, next_close_ms=200)
    assert clock.due(1499) == {} and clock.due(1500) == {"t": 1000}  # idle for 1000 ms: closes
    clock.committed("t", 500, processed=3, advanced=False, next_close_ms=4000)
    assert clock.due(4499) == {} and clock.due(4500) == {"t": 4000}  # the next close is further off
    clock.committed("t", 4500, processed=0, advanced=True, next_close_ms=300)
    assert clock.due(4799) == {} and clock.due(4800) == {"t": 300}  # already idle: no threshold again
    clock.committed("t", 4800, processed=0, advanced=True, next_close_ms=None)
    assert clock.due(10**9) == {}  # nothing open: never due until a record comes


def test_the_clock_counts_only_what_was_committed():
    clock = IdleClock(1000, ["t"], now_ms=0)
    clock.committed("t", 0, processed=1, advanced=False, next_close_ms=10)
    assert clock.due(1000) == {"t": 1000}
    assert clock.due(1500) == {"t": 1500}  # the run at 1000 did not commit: due still, further
    clock.committed("t", 1500, processed=0, advanced=False, next_close_ms=10)  # an advance that closed nothing
    assert clock.due(1500) == {"t": 1500}  # the anchor did not move
