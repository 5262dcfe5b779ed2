"""Kafka's completeness semantics on hand-worked sequences, then against an independent model."""

import random

import pytest

from deltastreams.streams import StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver
from tests.reference import WindowedCountModel, last_revision_per_window

STORE = "counts"


def windowed_count(windows, *, final=False):
    builder = StreamsBuilder()
    table = builder.stream("in").group_by_key().windowed_by(windows).count(name=STORE)
    if final:
        table = table.suppress(Suppressed.until_window_closes())
    table.to_stream().to("out")
    return builder.build()


def rows(records):
    return [(r.key, r.window_start, r.window_end, r.value, r.timestamp) for r in records]


def pipe(driver, keyed_stamps):
    for key, ts in keyed_stamps:
        driver.pipe_input("in", key, "v", timestamp=ts)


SEQUENCE = [("a", 1), ("a", 4), ("b", 12), ("a", 8), ("a", 16), ("a", 3), ("b", 14), ("a", 9)]


def test_tumbling_revisions_out_of_order_and_too_late_records():
    # size 10, grace 5. a@8 arrives out of order but in time (stream time 12 < 10 + 5);
    # a@3 and a@9 arrive after stream time 16 >= 10 + 5 closed [0, 10): dropped and counted.
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5)), {"caching": False}) as driver:
        pipe(driver, SEQUENCE)
        assert rows(driver.read_output("out")) == [
            ("a", 0, 10, 1, 1),
            ("a", 0, 10, 2, 4),
            ("b", 10, 20, 1, 12),
            ("a", 0, 10, 3, 8),
            ("a", 10, 20, 1, 16),
            ("b", 10, 20, 2, 14),
        ]
        assert driver.dropped_records == 2
        assert driver.fetch(STORE, "b", 10) == 2


def test_revision_timestamp_is_the_largest_timestamp_of_the_window():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(100))) as driver:
        pipe(driver, [("a", 9), ("a", 2)])
        assert [r.timestamp for r in driver.read_output("out")] == [9, 9]


def test_caching_emits_the_last_revision_per_window_per_commit_in_update_order():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5))) as driver:
        driver.pipe_batch("in", [(k, "v", ts) for k, ts in SEQUENCE])
        # [0,10) last updated by a@8 (4th record), [10,20) of a by a@16, of b by b@14.
        assert rows(driver.read_output("out")) == [("a", 0, 10, 3, 8), ("a", 10, 20, 1, 16), ("b", 10, 20, 2, 14)]
        assert driver.dropped_records == 2


def test_caching_off_emits_one_revision_per_record_even_within_one_commit():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5)), {"caching": False}) as driver:
        driver.pipe_batch("in", [(k, "v", ts) for k, ts in SEQUENCE])
        assert [r[3] for r in rows(driver.read_output("out"))] == [1, 2, 1, 3, 1, 2]


def test_hopping_windows_update_every_window_containing_the_record():
    # size 10, advance 5, grace 0: windows start at multiples of 5, never below 0.
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).advance_by(5)), {"caching": False}) as driver:
        pipe(driver, [("a", 7), ("a", 12), ("a", 3), ("a", 9)])
        assert rows(driver.read_output("out")) == [
            ("a", 0, 10, 1, 7),
            ("a", 5, 15, 1, 7),
            ("a", 5, 15, 2, 12),
            ("a", 10, 20, 1, 12),
            # a@3 belongs to [0,10) only, closed at stream time 12: dropped.
            # a@9: [0,10) closed (dropped), [5,15) still open.
            ("a", 5, 15, 3, 12),
        ]
        assert driver.dropped_records == 2


def test_suppress_emits_exactly_one_final_result_per_window_when_it_closes():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5), final=True)) as driver:
        pipe(driver, [("a", 1), ("a", 4), ("b", 14)])
        assert driver.read_output("out") == []  # [0,10) closes at stream time 15
        pipe(driver, [("b", 15)])
        assert rows(driver.read_output("out")) == [("a", 0, 10, 2, 4)]
        pipe(driver, [("a", 2), ("b", 24)])  # a@2 too late; stream time 24 < 20 + 5
        assert driver.read_output("out") == []
        pipe(driver, [("c", 30)])
        assert rows(driver.read_output("out")) == [("b", 10, 20, 2, 15)]
        assert driver.dropped_records == 1


def test_suppressed_windows_are_not_emitted_again_after_a_restart():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5), final=True), store_backend="rocksdb") as driver:
        pipe(driver, [("a", 1), ("b", 16)])
        assert len(driver.read_output("out")) == 1
        driver.restart()
        pipe(driver, [("b", 17), ("c", 40)])
        assert rows(driver.read_output("out")) == [("b", 10, 20, 2, 17)]
        assert driver.stream_time(STORE) == 40


def test_closed_windows_are_purged_after_size_plus_grace():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5))) as driver:
        pipe(driver, [("a", 1), ("b", 12)])
        assert driver.fetch(STORE, "a", 0) == 1
        pipe(driver, [("c", 15)])  # [0,10) closed: 10 + 5 <= 15
        assert driver.fetch(STORE, "a", 0) is None
        assert driver.fetch(STORE, "b", 10) == 1
        starts = [entry[0][:8] for entry in driver.store_entries(STORE) if not entry[0].startswith(b"\xff")]
        assert all(int.from_bytes(s, "big") >= 10 for s in starts)


def test_store_restored_from_changelog_continues_identically():
    with TopologyTestDriver(windowed_count(TimeWindows.of_size(10).grace(5)), {"caching": False}, store_backend="rocksdb") as driver:
        pipe(driver, SEQUENCE[:4])
        before = driver.store_entries(STORE)
        driver.restart()
        assert driver.store_entries(STORE) == before
        pipe(driver, SEQUENCE[4:])
        assert [r[3] for r in rows(driver.read_output("out"))] == [1, 2, 1, 3, 1, 2]


def random_records(seed, n=400):
    rng = random.Random(seed)
    out, clock = [], 0
    for _ in range(n):
        clock += rng.randint(0, 6)
        late = rng.random() < 0.2
        out.append((rng.choice("abcd"), max(0, clock - (rng.randint(0, 60) if late else 0))))
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("size", "advance", "grace"), [(20, 20, 10), (30, 10, 5), (25, 5, 0)])
def test_matches_the_reference_model_record_by_record(seed, size, advance, grace):
    records = random_records(seed)
    model = WindowedCountModel(size, advance, grace)
    for key, ts in records:
        model.process(key, ts)
    windows = TimeWindows.of_size(size).advance_by(advance).grace(grace)
    with TopologyTestDriver(windowed_count(windows), {"caching": False}) as driver:
        rng = random.Random(seed)
        i = 0
        while i < len(records):  # random commit boundaries: results must not depend on them
            n = rng.randint(1, 40)
            driver.pipe_batch("in", [(k, "v", ts) for k, ts in records[i : i + n]])
            i += n
        assert rows(driver.read_output("out")) == model.revisions
        assert driver.dropped_records == model.dropped


@pytest.mark.parametrize("seed", range(3))
def test_final_results_and_cached_revisions_do_not_depend_on_batching(seed):
    records = random_records(seed)
    model = WindowedCountModel(20, 20, 10)
    for key, ts in records:
        model.process(key, ts)
        model.close_windows()
    windows = TimeWindows.of_size(20).grace(10)
    for batch in (1, 7, 100, len(records)):
        with TopologyTestDriver(windowed_count(windows)) as cached, TopologyTestDriver(windowed_count(windows, final=True)) as final:
            for i in range(0, len(records), batch):
                chunk = [(k, "v", ts) for k, ts in records[i : i + batch]]
                cached.pipe_batch("in", chunk)
                final.pipe_batch("in", chunk)
            latest = last_revision_per_window(rows(cached.read_output("out")))
            assert latest == last_revision_per_window(model.revisions)
            emitted = rows(final.read_output("out"))
            assert sorted(emitted) == sorted(model.emitted_final)
            assert len({(k, s) for k, s, *_ in emitted}) == len(emitted)
