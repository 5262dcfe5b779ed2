"""Exactly-once, proven by killing real processes: the crash harness at small scale, and fencing."""

from __future__ import annotations

import re

import pytest

from deltastreams.devtools.harness import crash as crash_harness
from deltastreams.streams.runtime import COMMIT_CRASH_POINTS as POINTS
from tests.racing_instances import assert_fenced, race

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def harness(root, *, trials, guarantee, emit="revisions", events=6000, max_records=1000, retention="off", only_points=None):
    crash_harness.append_events(str(root), events, seed=11, appends=6)
    with open(root / "harness.log", "a") as log:
        report = crash_harness.run_trials(
            str(root), trials=trials, guarantee=guarantee, emit=emit, max_records=max_records, seed=3, log=log, retention=retention,
            only_points=only_points,
        )
    crash_harness.check(str(root), report)
    return report


def test_kills_at_every_commit_protocol_point_and_at_random_with_retention_running_leave_exactly_once_results(tmp_path):
    # One chain of runs for both proofs: a kill at each point of the commit protocol in turn, then
    # one at random, while retention (purge, compaction, optimize, file and log cleanup) runs at
    # every chance it gets; the checks read every file ever committed (the harness archives them).
    report = harness(tmp_path, trials=len(POINTS) + 1, guarantee="exactly_once", retention="on", only_points=POINTS)
    assert set(report.kills) >= set(POINTS), report.summary()  # every named point was hit
    assert report.kills["random"] + report.runs_finished_early == 1, report.summary()
    assert report.violations == [], report.summary()
    assert report.windows > 0 and report.stores_checked > 0
    live, ever = map(int, re.match(r"(\d+) of (\d+) files live", next(s for n, s in report.tables.items() if n.endswith("repartition"))).groups())
    assert live < ever, report.summary()  # consumed repartition records were purged


def test_emit_final_survives_kills_with_one_result_per_closed_window(tmp_path):
    # The kills that could emit a final result twice: after the decision, and half-way through
    # publishing it.
    report = harness(tmp_path, trials=2, guarantee="exactly_once", emit="final", only_points=("after_commit", "during_publication"))
    assert set(report.kills) == {"after_commit", "during_publication"}, report.summary()
    assert report.violations == [], report.summary()
    assert report.windows > 0


def test_at_least_once_under_the_same_kills_duplicates_what_exactly_once_does_not(tmp_path):
    # The harness's checks can fail: at-least-once, killed in the middle of publishing, must show it.
    crash_harness.append_events(str(tmp_path), 6000, seed=11, appends=6)
    command = crash_harness.job_command(str(tmp_path), "at_least_once", "revisions", 1000)
    with open(tmp_path / "harness.log", "a") as log:
        assert crash_harness.run_once(command, crash_at="during_publication@2", kill_after_s=None, log=log) == "crash-point"
        assert crash_harness.run_once(command, crash_at=None, kill_after_s=None, log=log) == "finished"
    report = crash_harness.Report("at_least_once", "revisions")
    crash_harness.check(str(tmp_path), report)
    assert report.duplicated_repartition_records > 0 or report.wrong_windows > 0, report.summary()


def test_a_second_instance_fences_the_first_and_output_stays_exactly_once(tmp_path):
    first_code, zombie = race(str(tmp_path), tmp_path / "logs")
    assert_fenced(first_code, zombie)
    report = crash_harness.Report("exactly_once", "revisions")
    crash_harness.check(str(tmp_path), report)
    assert report.violations == [], report.summary()
