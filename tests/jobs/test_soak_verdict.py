import pytest

from deltastreams.devtools.harness.soak_verdict import (
    Buckets,
    Windows,
    batch_time_check,
    cadence_check,
    latency_check,
    generator_memory_check,
    memory_check,
    overall,
    process_memory_check,
    second_half,
    slope_per_minute,
    topics_check,
    trend_growth,
)


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
                "memory_mb": {"total": 3000 + minute},
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
        s["memory_mb"]["total"] = 4000
    assert memory_check(samples, Windows.for_duration(720)).passed is False


def _process_samples(host_growth: float, *, driver_swing: float = 0.0) -> list[dict]:
    """Two hours, a sample a minute: a driver that warms up in its first ten minutes and then
    swings by ``driver_swing`` MB from sample to sample, a task host growing ``host_growth``
    MB/min all along, a flat JVM."""
    samples = []
    for minute in range(121):
        swing = driver_swing * (1 if minute % 3 == 0 else -0.5)
        processes = [
            {"pid": 1, "role": "driver", "pss_mb": min(250 + 14 * minute, 390) + swing},
            {"pid": 2, "role": "task-host", "pss_mb": 110 + host_growth * minute},
            {"pid": 3, "role": "jvm", "pss_mb": 2000},
        ]
        samples.append({"t": minute * 60.0, "memory_mb": {"total": sum(p["pss_mb"] for p in processes), "processes": processes}, "generator_memory_mb": 250})
    return samples


def test_every_process_is_judged_by_its_trend_over_the_second_half():
    windows = Windows.for_duration(7200)
    assert second_half(windows) == (3600, 7200)
    flat = process_memory_check(_process_samples(0.0), windows)
    assert flat.passed is True, flat.detail
    growing = _process_samples(0.5)
    assert memory_check(growing, windows).passed is True  # the total hides it
    check = process_memory_check(growing, windows)
    assert check.passed is False and "task-host 2 140 -> 170 MB (+21%)" in check.detail, check.detail


def test_a_swinging_process_without_a_trend_is_flat_and_one_high_last_sample_does_not_fail_it():
    samples = _process_samples(0.0, driver_swing=80.0)
    samples[-1]["memory_mb"]["processes"][0]["pss_mb"] = 510  # the last sample at the top of a swing
    windows = Windows.for_duration(7200)
    check = process_memory_check(samples, windows)
    assert check.passed is True, check.detail
    start, end, growth = trend_growth([(s["t"], s["memory_mb"]["processes"][0]["pss_mb"]) for s in samples if s["t"] >= 3600])
    assert 0 < growth < 0.05 and 380 < start < end < 420


def test_trend_growth_needs_three_samples():
    assert trend_growth([(0, 100), (60, 120)]) is None
    assert trend_growth([(0, 100), (60, 110), (120, 120)]) == pytest.approx((100, 120, 0.2))


def test_overall_fails_on_any_failure_and_is_undecided_on_missing_data():
    check, _ = topics_check(_samples(0, 0), Windows.for_duration(720))
    undecided = batch_time_check([], Windows.for_duration(720))
    failed = batch_time_check(_batches(400, 800), Windows.for_duration(720))
    assert overall([check]) == "PASS"
    assert overall([check, undecided]) == "UNDECIDED"
    assert overall([check, undecided, failed]) == "FAIL"


def test_buckets_are_ten_minutes_in_long_runs_and_six_in_short_ones():
    assert Buckets.for_duration(7200).spans()[:2] == [(60, 660), (660, 1260)] and Buckets.for_duration(7200).count == 11
    short = Buckets.for_duration(600)
    assert short.count == 6 and short.spans()[0][0] == pytest.approx(50) and short.spans()[-1][1] == pytest.approx(600)


def _appends(gap_ms_by_minute: dict[int, float], minutes: int = 120) -> list[float]:
    """Append times (s) of a writer whose gap is ``gap_ms_by_minute[m]`` from minute ``m`` on."""
    times, t, gap = [], 0.0, None
    while t < minutes * 60:
        gap = gap_ms_by_minute.get(int(t // 60), gap)
        times.append(t)
        t += gap / 1000
    return times


def test_the_2_hour_soak_of_issue_42_fails_on_its_writer_and_its_job():
    # Recorded there: input appends 104 ms apart for 10 minutes, then 300-400 ms; the job follows.
    slowed = _appends({0: 104, 10: 312, 20: 248, 30: 300, 40: 396, 50: 336, 60: 300, 80: 304, 90: 400, 110: 400})
    buckets = Buckets.for_duration(7200)
    failed = cadence_check("input appends flat", slowed, buckets)
    assert failed.passed is False and "median gap per bucket: 104, 312, 248" in failed.detail and "+285%" in failed.detail


def test_a_steady_writer_and_job_pass_however_long_the_run():
    steady = _appends({0: 100, 30: 104, 60: 98, 90: 103})
    assert cadence_check("output commits flat", steady, Buckets.for_duration(7200)).passed is True


def test_one_slow_bucket_anywhere_fails_not_only_the_last():
    # A verdict that compared only the last minutes with the first would pass this run.
    times = _appends({0: 100, 40: 150, 50: 100})
    assert cadence_check("output commits flat", times, Buckets.for_duration(7200)).passed is False


def test_latency_p99_per_bucket_against_the_first():
    commits = [(t, 250.0 if i % 50 else 500.0) for i, t in enumerate(_appends({0: 100}))]  # 2% at 500 ms: p99 500 ms throughout
    assert latency_check(commits, Buckets.for_duration(7200)).passed is True
    grown = [(t, ms * (2.5 if t > 3600 else 1.0)) for t, ms in commits]
    failed = latency_check(grown, Buckets.for_duration(7200))
    assert failed.passed is False and "p99 latency per bucket" in failed.detail


def test_a_bucket_without_commits_cannot_be_judged():
    times = [t for t in _appends({0: 100}) if not 1200 < t < 1900]  # the job stalled for a bucket's length
    assert cadence_check("output commits flat", times, Buckets.for_duration(7200)).passed is None


def test_the_input_yardstick_for_files_is_what_its_appends_wrote():
    samples = _samples(0, 10)
    for s in samples:  # the writer merges its small files: the input's own file count stays flat
        s["input_files_written"], s["topics"]["input"]["files"] = s["topics"]["input"]["files"], 150
    check, _ = topics_check(samples, Windows.for_duration(720))
    assert check.passed is True and "1,800 files written/min" in check.detail


def test_the_generators_memory_is_judged_apart_from_the_jobs():
    windows = Windows.for_duration(7200)
    samples = _process_samples(0.0)
    for s in samples:  # the writer warms up for 20 minutes, then stays flat: flat
        s["generator_memory_mb"] = min(230 + s["t"] / 60, 250)
    assert generator_memory_check(samples, windows).passed is True
    for s in samples:  # the writer grows all along, the job does not
        s["generator_memory_mb"] = 320 + s["t"] / 60
    assert memory_check(samples, windows).passed is True
    grown = generator_memory_check(samples, windows)
    assert grown.passed is False and "generator 380 -> 440 MB (+16%)" in grown.detail, grown.detail
