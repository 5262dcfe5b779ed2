"""Kill a join job at random moments and inside the commit protocol; check what survives against
the job's independent pandas computation. Two jobs: ``enrich`` (a stream-table join: two input
topics in one sub-topology, a table store, a repartition, a windowed count) and ``clicks`` (a
stream-stream left join: two window stores and the store of impressions waiting for a click) and
``dedup`` (a user processor with its own store and a stream-time punctuator; ``dedup-vectorised``
is the same job as a batch processor with a typed store) and ``fkjoin`` (a foreign-key table join:
two sub-topologies feeding each other through the subscription and response topics).

    python -m deltastreams.devtools.harness.enrich --root /tmp/enrich-harness --trials 30
    python -m deltastreams.devtools.harness.enrich --job clicks --root /tmp/clicks-harness --trials 30
    python -m deltastreams.devtools.harness.enrich --job dedup --root /tmp/dedup-harness --trials 30
    python -m deltastreams.devtools.harness.enrich --job dedup-vectorised --root /tmp/dedup-v-harness --trials 30
    python -m deltastreams.devtools.harness.enrich --job fkjoin --root /tmp/fkjoin-harness --trials 10

Each trial appends one round (a users update, then its pageviews) and starts ``python -m
deltastreams.jobs.enrich run --until-caught-up``, killed with SIGKILL at a named commit point or after a
random delay; one run without kills finishes. Checks: the latest count per region and window
equals :func:`deltastreams.jobs.enrich.reference_counts` (each view counted in the region its user had at
the time), and no revision was committed twice (exactly-once: a window's count only grows, so a
repeated ``(region, window, count)`` is a batch published twice). For ``clicks``, a last run
after :func:`deltastreams.jobs.clicks.close` closes every window; then the attributed impressions must be
:func:`deltastreams.jobs.clicks.reference_pairs` exactly, each once. For ``fkjoin``, the last joined
row per order must be :func:`deltastreams.jobs.fkjoin.reference` (pandas over the final input
tables), and no join result came out twice (every input value is new, so a repeat is a batch
published twice).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path

from deltastreams.jobs import clicks, dedup, enrich, fkjoin
from deltastreams.devtools.harness.crash import run_once
from deltastreams.sinks import Topic
from deltastreams.streams.runtime import CRASH_POINTS as POINTS

ONE_ROUND = 200
"""Records per batch and topic: a round's users update (1,000 or 200 records) and its views are
each one Delta version, so every batch holds one round of both topics, never a users update
ahead of its views (the reference's assumption; see deltastreams.jobs.enrich)."""


VARIANTS = {"dedup-vectorised": ("dedup", ["--vectorised"]), "fkjoin": ("fkjoin", ["--set", "caching=false"])}
"""Harness jobs that run another job's module with extra ``run`` options (and share its checks)."""


def _module(job: str) -> str:
    return VARIANTS[job][0] if job in VARIANTS else job


def command(root: str, job: str = "enrich") -> list[str]:
    return [
        sys.executable, "-m", f"deltastreams.jobs.{_module(job)}", "run", "--root", root, "--until-caught-up", "--timeout-s", "600",
        "--commit-interval-ms", "100", "--max-records-per-batch", str(ONE_ROUND if job == "enrich" else 1), *(VARIANTS[job][1] if job in VARIANTS else ()),
    ]


CLICKS_ROUND = 400
"""Impressions (and clicks) per round of the clicks job: four slices of each topic, one Delta
version each, so one batch per slice (``--max-records-per-batch 1``)."""


def _append_round(root: str, job: str, seed: int) -> None:
    job = _module(job)
    if job == "enrich":
        enrich.generate(root, rounds=1, events_per_round=4_000, seed=seed)
    elif job == "dedup":
        dedup.generate(root, rounds=1, per_round=CLICKS_ROUND, seed=seed)
    elif job == "fkjoin":
        fkjoin.generate(root, rounds=1, seed=seed)
    else:
        clicks.generate(root, rounds=1, per_round=CLICKS_ROUND, seed=seed)


def run(root: str, trials: int, seed: int, log, job: str = "enrich") -> tuple[Counter, list[str]]:
    rng = random.Random(seed)
    kills: Counter = Counter()
    violations: list[str] = []
    points = [p for p in POINTS if not p.startswith("retention_")]
    for trial in range(trials):
        _append_round(root, job, seed)
        if trial < len(points) or rng.random() < 0.5:
            point = points[trial % len(points)]
            crash, delay, label = f"{point}@{rng.randint(1, 3)}", None, point
        else:
            crash, delay, label = None, rng.uniform(8.0, 25.0), "random"
        print(f"trial {trial + 1}/{trials}: {crash or f'kill after {delay:.1f} s'}", file=log, flush=True)
        ended = run_once(command(root, job), crash_at=crash, kill_after_s=delay, log=log)
        if ended.startswith("failed"):
            violations.append(f"trial {trial + 1} ({label}) failed instead of crashing: {ended}")
        kills[label if ended != "finished" else "finished before the kill"] += 1
    if job == "clicks":
        clicks.close(root)
    if run_once(command(root, job), crash_at=None, kill_after_s=None, log=log) != "finished":
        violations.append("the final run did not finish")
    return kills, violations


def check_counted(got: Counter, want: Counter, what: str) -> list[str]:
    """Each expected record once: nothing missing, nothing extra or repeated."""
    if got == want:
        return []
    missing, extra = want - got, got - want
    return [f"{sum(missing.values())} of {sum(want.values())} {what} missing (e.g. {list(missing)[:3]}), "
            f"{sum(extra.values())} extra or repeated (e.g. {list(extra)[:3]})"]


def check(root: str, job: str = "enrich") -> list[str]:
    job = _module(job)
    if job == "clicks":
        return check_counted(clicks.read_results(root), clicks.reference_pairs(root), "attributions")
    if job == "dedup":
        return check_counted(dedup.read_results(root), dedup.reference_events(root), "unique events")
    if job == "fkjoin":
        return check_fkjoin(root)
    violations = []
    results, expected = enrich.read_results(root), enrich.reference_counts(root)
    if not results.equals(expected):
        got = {(r["region"], r["window_start"]): r["count"] for r in results.to_pylist()}
        want = {(r["region"], r["window_start"]): r["count"] for r in expected.to_pylist()}
        wrong = sorted(k for k in got.keys() | want.keys() if got.get(k) != want.get(k))
        violations.append(f"{len(wrong)} of {len(want)} windows differ from the reference, e.g. {[(k, got.get(k), want.get(k)) for k in wrong[:3]]}")
    raw = Topic.open(root, enrich.OUTPUT_TOPIC).read()
    revisions = Counter(zip(raw["key"].to_pylist(), raw["window_start"].to_pylist(), raw["value"].to_pylist(), strict=True))
    repeated = {r: n for r, n in revisions.items() if n > 1}
    if repeated:
        violations.append(f"{len(repeated)} revisions committed more than once, e.g. {list(repeated)[:3]}")
    return violations


def check_fkjoin(root: str) -> list[str]:
    violations = []
    latest, records = fkjoin.read_results(root)
    expected = fkjoin.reference(root)
    if latest != expected:
        wrong = sorted(k for k in latest.keys() | expected.keys() if latest.get(k) != expected.get(k))
        violations.append(f"{len(wrong)} of {len(expected)} joined orders differ from the reference, e.g. {[(k, latest.get(k), expected.get(k)) for k in wrong[:3]]}")
    joined = records[records["value"].notna()]
    repeated = joined.groupby(["key", "value"]).size()
    repeated = repeated[repeated > 1]
    if len(repeated):
        violations.append(f"{len(repeated)} join results committed more than once, e.g. {list(repeated.index[:3])}")
    return violations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="a fresh directory")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--job", choices=("enrich", "clicks", "dedup", *VARIANTS), default="enrich")
    args = parser.parse_args(argv)
    root = str(Path(args.root).absolute())
    if (Path(root) / "topics").exists():
        print(f"error: {root} already holds topics; give a fresh directory", file=sys.stderr)
        return 2
    Path(root).mkdir(parents=True, exist_ok=True)
    with open(Path(root) / "harness.log", "a") as log:
        kills, violations = run(root, args.trials, args.seed, log, args.job)
    violations += check(root, args.job)
    if args.job == "enrich":
        checked = f"windows checked: {enrich.reference_counts(root).num_rows}"
    elif args.job == "fkjoin":
        checked = f"joined orders checked: {len(fkjoin.reference(root))}"
    elif _module(args.job) == "dedup":
        checked = f"unique events checked: {sum(dedup.reference_events(root).values())}"
    else:
        checked = f"attributions checked: {sum(clicks.reference_pairs(root).values())}"
    print(f"{args.job}, exactly_once: {args.trials} trials (kills: {dict(kills)}); {checked}; violations: {len(violations)}")
    for violation in violations:
        print(f"  {violation}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
