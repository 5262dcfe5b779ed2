import pytest

from deltastreams.devtools.harness.soak_verdict import Windows, batch_time_check, memory_check, overall, slope_per_minute, topics_check


def test_windows_are_minutes_2_to_7_and_the_last_5_from_12_minutes_on():
    assert Windows.for_duration(3600) == Windows((60, 420), (3300, 3600))
    assert Windows.for_duration(720) == Windows((60, 420), (420, 720))


def test_short_runs_scale_the_windows_so_they_do_not_overlap():
    w = Windows.for_duration(180)
    assert w.baseline == pytest.approx((15, 105)) and w.last == pytest.approx((105, 180))


def test_slope_is_per_minute_and_needs_two_points():
    assert slope_per_minute([(0, 10), (30, 20), (60, 30)]) == pytest.approx(20)
    assert slope_per_minute([(0, 10)]) is None


def _batches(ms_before, ms_after):
    return [(t / 10, ms_before if t < 4200 else ms_after) for t in range(0, 7200, 5)]


def test_batch_time_passes_within_10_percent_and_fails_beyond():
    w = Windows.for_duration(720)
    assert batch_time_check(_batches(400, 430), w).passed is True
    failed = batch_time_check(_batches(418, 607), w)
    assert failed.passed is False and "+45%" in failed.detail


def test_batch_time_is_undecided_without_enough_batches():
    assert batch_time_check([(100, 400), (500, 400)], Windows.for_duration(720)).passed is None


def _samples(internal_per_min, sink_files_per_min, *, sawtooth=False):
    samples = []
    for minute in range(13):
        t = minute * 60
        internal = internal_per_min * minute + (300 if sawtooth and minute % 2 else 0)
        samples.append(
            {
                "t": t,
                "topics": {
                    "input": {"files": 1800 * minute, "bytes": 18_000_000 * minute},
                    "repartition": {"files": internal, "bytes": internal * 10_000},
                    "changelog": {"files": 50, "bytes": 500_000},
                    "sink": {"files": sink_files_per_min * minute, "bytes": 1_000_000 * minute},
                },
                "rss_mb": {"total": 3000 + minute},
            }
        )
    return samples


def test_topics_are_flat_when_internal_topics_and_sink_files_stop_growing():
    check, slopes = topics_check(_samples(0, 10, sawtooth=True), Windows.for_duration(720))
    assert check.passed is True
    assert slopes["input_files_per_min"] == pytest.approx(1800)


def test_topics_growing_with_the_input_are_not_flat():
    check, slopes = topics_check(_samples(600, 10), Windows.for_duration(720))  # a third of the input's rate
    assert check.passed is False and "internal files +33.3%" in check.detail
    assert slopes["repartition_files_per_min"] == pytest.approx(600)


def test_sink_files_piling_up_are_not_flat():
    check, _ = topics_check(_samples(0, 400), Windows.for_duration(720))
    assert check.passed is False and "sink files +22.2%" in check.detail


def test_memory_check_compares_window_means():
    samples = _samples(0, 0)
    assert memory_check(samples, Windows.for_duration(720)).passed is True
    for s in samples[8:]:
        s["rss_mb"]["total"] = 4000
    assert memory_check(samples, Windows.for_duration(720)).passed is False


def test_overall_fails_on_any_failure_and_is_undecided_on_missing_data():
    check, _ = topics_check(_samples(0, 0), Windows.for_duration(720))
    undecided = batch_time_check([], Windows.for_duration(720))
    failed = batch_time_check(_batches(400, 800), Windows.for_duration(720))
    assert overall([check]) == "PASS"
    assert overall([check, undecided]) == "UNDECIDED"
    assert overall([check, undecided, failed]) == "FAIL"
