"""The soak test's verdict: does the job run flat?

Times are seconds since the job's first committed micro-batch (start-up is not steady state).
Two windows of the run are compared: the *baseline*, minutes 2-7 (after a minute of warm-up), and
the *last* 5 minutes. Runs shorter than 12 minutes (where those would overlap) scale both windows
and the warm-up by ``duration / 12 min``: a 3-minute run compares seconds 15-105 with 105-180.

The cadences and the latency are judged over the whole run instead, in *buckets* from the end of
the warm-up on (10 minutes each in runs of 40 minutes or more, else six equal ones), each against
the first: the output topic's log is cleaned as the job runs, so they are followed as they come
(:class:`~deltastreams.devtools.harness.soak_probe.CommitFollower`), not read from the log at the
end, which would see only its last minutes.

Checks (each passes, fails, or is undecided when its window holds too little to judge):
- **input appends flat**: the median gap between the input topic's appends, in every bucket, is
  at most 20% above the first bucket's (the writer, measured apart from the job: a job follows its
  input, so a slower writer makes a slower job).
- **output commits flat**: the same for the commits that appended to the output topic (the job's
  cadence).
- **latency flat**: the 99th percentile of the output commits' latency (commit time minus the
  newest record's timestamp: how long the newest input took to reach the output), in every
  bucket, is at most 20% above the first bucket's.
- **batch time**: the median wall time of the last window's micro-batches (all sub-topologies)
  is at most 10% above the baseline's.
- **topics flat**: over the last window, the least-squares slope of the file count and of the
  bytes under the internal topics (repartition and changelog) is at most 5% of the input's, and
  so is the slope of the sink topics' file count. The input is the yardstick: its bytes grow by
  design (nothing removes what the generator appends), and for files, the files its appends
  write (appends x partitions: its writer merges them as it goes, so its own file count stays
  flat). The sinks' bytes grow with the results and are only reported. Retention that works
  leaves slopes near zero (a saw-tooth at most); unbounded growth is a sizeable share of the
  input's. The last window must start after the first retention cycle has completed for this to
  mean "flat after retention".
- **memory flat**: the mean memory (PSS: a page shared by n processes counts 1/n in each, so a
  fork is not counted twice) of all the job's processes over the last window's samples is at most
  10% above the baseline's.
- **generator memory flat** and **every process flat in the second half**: the generator's
  memory, and each of the job's processes' (by pid, sampled at least three times in the second
  half), grows at most 10% over the second half of the run by its trend: the least-squares line
  through its samples there, from its value at the start of the half to its value at the end.
  The first minutes are warm-up for memory (the driver grows 250 -> 390 MB in its first ten; the
  writer's checkpoints carry a topic's removed files for 20 minutes before they level off), and a
  total can hide one process that keeps growing (three stateful task hosts at ~0.5 MB/min each,
  RocksDB's memtables, in a soak of issue 42). A trend, not two windows' means: the driver's
  memory swings 100-150 MB between samples with Python's garbage collection and Spark's
  listeners, so one window's mean depends on where the swings fall, where a line through 60
  samples does not.
- **generator kept its rate** (else the run measured a different load): at least 95% of target.
- **job kept up**: the input not yet consumed at the end is at most 10 s of input.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

FULL_RUN_S = 720.0
WARM_UP_S, BASELINE_END_S, LAST_S = 60.0, 420.0, 300.0
BUCKET_S, LONG_RUN_S, SHORT_RUN_BUCKETS = 600.0, 2400.0, 6
GROWTH_LIMIT = 0.10
CADENCE_LIMIT = 0.20
MIN_COMMITS = 10
FLAT_SHARE = 0.05
MIN_BATCHES = 10
MIN_SAMPLES = 3
RATE_SHARE = 0.95
MAX_LAG_S = 10.0


@dataclass(frozen=True)
class Windows:
    baseline: tuple[float, float]
    last: tuple[float, float]

    @classmethod
    def for_duration(cls, seconds: float) -> Windows:
        scale = min(1.0, seconds / FULL_RUN_S)
        return cls((WARM_UP_S * scale, BASELINE_END_S * scale), (seconds - LAST_S * scale, seconds))


@dataclass(frozen=True)
class Buckets:
    """Consecutive spans of the run after the warm-up; the first is the baseline."""

    start: float
    length: float
    count: int

    @classmethod
    def for_duration(cls, seconds: float) -> Buckets:
        warm_up = WARM_UP_S * min(1.0, seconds / FULL_RUN_S)
        if seconds >= LONG_RUN_S:
            return cls(warm_up, BUCKET_S, max(1, int((seconds - warm_up) // BUCKET_S)))
        return cls(warm_up, (seconds - warm_up) / SHORT_RUN_BUCKETS, SHORT_RUN_BUCKETS)

    def spans(self) -> list[tuple[float, float]]:
        return [(self.start + i * self.length, self.start + (i + 1) * self.length) for i in range(self.count)]

    def split(self, times: list[float], values: list[float] | None = None) -> list[list[float]]:
        """``values`` (default: ``times``) per bucket, by their time."""
        values = times if values is None else values
        return [[v for t, v in zip(times, values, strict=True) if _within(t, span)] for span in self.spans()]


def gaps(times: list[float]) -> tuple[list[float], list[float]]:
    """(time, ms since the previous one) of every event but the first, ``times`` in seconds."""
    ordered = sorted(times)
    return ordered[1:], [(b - a) * 1000 for a, b in zip(ordered, ordered[1:])]


def per_bucket(times: list[float], values: list[float], buckets: Buckets, statistic: str) -> list[float | None]:
    """``statistic`` (``p50`` or ``p99``) of the values in each bucket (None: fewer than
    :data:`MIN_COMMITS`)."""
    q = {"p50": 50, "p99": 99}[statistic]
    return [float(np.percentile(b, q)) if len(b) >= MIN_COMMITS else None for b in buckets.split(times, values)]


def flat_check(name: str, what: str, series: list[float | None], limit: float = CADENCE_LIMIT) -> Check:
    """Every bucket of ``series`` at most ``limit`` above the first one."""
    shown = ", ".join("-" if v is None else f"{v:,.0f}" for v in series)
    if not series or series[0] is None or any(v is None for v in series[1:]):
        return Check(name, None, f"{what} per bucket: {shown} ms; a bucket with fewer than {MIN_COMMITS} commits cannot be judged")
    first, worst = series[0], max(series[1:], default=series[0])
    return Check(
        name,
        worst <= first * (1 + limit),
        f"{what} per bucket: {shown} ms; the highest is {(worst / first - 1) * 100:+.0f}% of the first bucket's (limit +{limit:.0%})",
    )


def cadence_check(name: str, commit_times: list[float], buckets: Buckets) -> Check:
    """The median gap between consecutive commits, per bucket, against the first bucket."""
    times, ms = gaps(commit_times)
    return flat_check(name, "median gap", per_bucket(times, ms, buckets, "p50"))


def latency_check(commits: list[tuple[float, float]], buckets: Buckets) -> Check:
    """``commits``: (time, latency ms); the 99th percentile per bucket against the first."""
    return flat_check("latency flat", "p99 latency", per_bucket([t for t, _ in commits], [ms for _, ms in commits], buckets, "p99"))


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool | None
    """None: undecided (too little data in a window)."""
    detail: str

    def to_json(self) -> dict:
        return asdict(self)


def _within(t: float, window: tuple[float, float], *, closed: bool = False) -> bool:
    start, end = window
    return (start <= t if closed else start < t) and t <= end


def slope_per_minute(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of ``(seconds, value)`` points, per minute (None below 2 points)."""
    if len(points) < 2:
        return None
    t, v = np.array(points, dtype=float).T
    if np.ptp(t) == 0:
        return None
    return float(np.polyfit(t, v, 1)[0] * 60)


def batch_time_check(batches: list[tuple[float, float]], windows: Windows) -> Check:
    """``batches``: (seconds, total ms) per committed micro-batch."""
    base = [ms for t, ms in batches if _within(t, windows.baseline)]
    last = [ms for t, ms in batches if _within(t, windows.last)]
    if len(base) < MIN_BATCHES or len(last) < MIN_BATCHES:
        return Check("batch time", None, f"too few batches to compare ({len(base)} in the baseline, {len(last)} in the last window; {MIN_BATCHES} needed)")
    b, l = float(np.median(base)), float(np.median(last))
    return Check(
        "batch time",
        l <= b * (1 + GROWTH_LIMIT),
        f"median {l:.0f} ms over the last window ({len(last)} batches) vs {b:.0f} ms in the baseline ({len(base)}): {(l / b - 1) * 100:+.0f}% (limit +{GROWTH_LIMIT:.0%})",
    )


def _series(samples: list[dict], window: tuple[float, float], value) -> list[tuple[float, float]]:
    return [(s["t"], value(s)) for s in samples if _within(s["t"], window, closed=True)]


def _internal(s: dict, field: str) -> float:
    return s["topics"]["repartition"][field] + s["topics"]["changelog"][field]


def topics_check(samples: list[dict], windows: Windows) -> tuple[Check, dict]:
    """The check and every slope it used (files/min, bytes/min), per kind of topic."""
    slopes = {
        f"{kind}_{field}_per_min": slope_per_minute(_series(samples, windows.last, lambda s, k=kind, f=field: s["topics"][k][f]))
        for kind in ("input", "repartition", "changelog", "sink")
        for field in ("files", "bytes")
    }
    in_window = sum(1 for s in samples if _within(s["t"], windows.last, closed=True))
    if in_window < MIN_SAMPLES:
        return Check("topics flat", None, f"{in_window} samples in the last window ({MIN_SAMPLES} needed)"), slopes
    internal_files = slope_per_minute(_series(samples, windows.last, lambda s: _internal(s, "files")))
    internal_bytes = slope_per_minute(_series(samples, windows.last, lambda s: _internal(s, "bytes")))
    written = _series(samples, windows.last, lambda s: s.get("input_files_written", s["topics"]["input"]["files"]))
    input_files, input_bytes = slope_per_minute(written), slopes["input_bytes_per_min"]
    if not input_files or not input_bytes or input_files <= 0 or input_bytes <= 0:
        return Check("topics flat", None, "the input did not grow over the last window: no yardstick"), slopes
    ratios = {
        "internal files": internal_files / input_files,
        "internal bytes": internal_bytes / input_bytes,
        "sink files": slopes["sink_files_per_min"] / input_files,
    }
    detail = ", ".join(f"{name} {ratio:+.1%}" for name, ratio in ratios.items())
    return Check(
        "topics flat",
        all(r <= FLAT_SHARE for r in ratios.values()),
        f"growth over the last window as a share of the input's: {detail} (limit {FLAT_SHARE:.0%}); "
        f"input {input_files:,.0f} files written/min ({slopes['input_files_per_min']:+,.0f} files/min kept), {input_bytes / 2**20:,.1f} MB/min",
    ), slopes


def _memory(s: dict) -> float:
    return s["memory_mb"]["total"]


def memory_check(samples: list[dict], windows: Windows) -> Check:
    """The mean memory of the job's processes (MB) over the last window against the baseline's."""
    base = [_memory(s) for s in samples if _within(s["t"], windows.baseline, closed=True)]
    last = [_memory(s) for s in samples if _within(s["t"], windows.last)]
    if not base or not last:
        return Check("memory flat", None, f"{len(base)} samples in the baseline, {len(last)} in the last window")
    b, l = float(np.mean(base)), float(np.mean(last))
    return Check("memory flat", l <= b * (1 + GROWTH_LIMIT), f"mean PSS {l:,.0f} MB over the last window vs {b:,.0f} MB in the baseline: {(l / b - 1) * 100:+.0f}% (limit +{GROWTH_LIMIT:.0%})")


def second_half(windows: Windows) -> tuple[float, float]:
    end = windows.last[1]
    return (end / 2, end)


def trend_growth(points: list[tuple[float, float]]) -> tuple[float, float, float] | None:
    """The least-squares line through ``(seconds, MB)`` points: (its value at the first point, at
    the last, growth between them as a fraction of the first); None below :data:`MIN_SAMPLES`."""
    if len(points) < MIN_SAMPLES:
        return None
    t, v = np.array(sorted(points), dtype=float).T
    if np.ptp(t) == 0:
        return None
    slope, intercept = np.polyfit(t, v, 1)
    start, end = intercept + slope * t[0], intercept + slope * t[-1]
    return float(start), float(end), float((end - start) / start) if start > 0 else float("inf")


def _trend_check(name: str, series: dict[str, list[tuple[float, float]]], half: tuple[float, float], what: str) -> Check:
    trends = {k: g for k, g in ((k, trend_growth(points)) for k, points in series.items()) if g is not None}
    if not trends:
        return Check(name, None, f"fewer than {MIN_SAMPLES} samples of {what} in the second half ({half[0]:.0f}-{half[1]:.0f} s)")
    ranked = sorted(trends, key=lambda k: trends[k][2], reverse=True)
    grown = [k for k in ranked if trends[k][2] > GROWTH_LIMIT]
    shown = ", ".join(f"{k} {trends[k][0]:,.0f} -> {trends[k][1]:,.0f} MB ({trends[k][2] * 100:+.0f}%)" for k in ranked[:4])
    return Check(
        name,
        not grown,
        f"PSS by its trend over {half[0]:.0f}-{half[1]:.0f} s, the {min(4, len(ranked))} that grew most of {len(ranked)}: {shown} (limit +{GROWTH_LIMIT:.0%})",
    )


def process_memory_check(samples: list[dict], windows: Windows) -> Check:
    """Every process of the job, by pid: its memory's trend over the second half of the run."""
    half = second_half(windows)
    series: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        if _within(s["t"], half, closed=True):
            for p in s["memory_mb"].get("processes", []):
                series.setdefault(f"{p['role']} {p['pid']}", []).append((s["t"], p["pss_mb"]))
    return _trend_check("every process flat in the second half", series, half, "any process")


def generator_memory_check(samples: list[dict], windows: Windows) -> Check:
    """The generator's memory: its trend over the second half of the run."""
    half = second_half(windows)
    points = [(s["t"], s["generator_memory_mb"]) for s in samples if _within(s["t"], half, closed=True) and s.get("generator_memory_mb") is not None]
    return _trend_check("generator memory flat", {"generator": points}, half, "the generator")


def generator_check(achieved_rate: float | None, rate: int) -> Check:
    if achieved_rate is None:
        return Check("generator kept its rate", None, "no report from the generator")
    return Check("generator kept its rate", achieved_rate >= rate * RATE_SHARE, f"{achieved_rate:,.0f} events/s of {rate:,} (at least {RATE_SHARE:.0%} needed)")


def lag_check(lag_events: int | None, rate: int) -> Check:
    if lag_events is None:
        return Check("job kept up", None, "input or consumption unknown at the end")
    return Check("job kept up", lag_events <= rate * MAX_LAG_S, f"{lag_events:,} events not yet consumed at the end ({lag_events / rate:.1f} s of input; at most {MAX_LAG_S:.0f} s)")


def overall(checks: list[Check]) -> str:
    if any(c.passed is False for c in checks):
        return "FAIL"
    if any(c.passed is None for c in checks):
        return "UNDECIDED"
    return "PASS"
