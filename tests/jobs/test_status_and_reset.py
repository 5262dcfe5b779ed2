"""``status`` (read-only, running or stopped) and ``reset`` (Kafka's application reset tool) on the
pageview job: what status reports against what was appended, that reset reprocesses exactly what
its target says, that it refuses a running application, and that a reset killed at any of its
crash points completes when run again (and the application refuses to start meanwhile).

One small run (600 events, then 300 more appended unprocessed) is shared: each test works on a
copy of its root.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import ConfigError
from deltastreams.jobs.pageview import APPLICATION_ID, OUTPUT_TOPIC, RAW_SCHEMA, build_topology, generate, read_results
from deltastreams.jobs.pageview_data import generate_events
from deltastreams.sinks import Topic
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.reset import ResetError, ResetTarget, reset
from deltastreams.streams.runtime import RESET_CRASH_POINTS
from deltastreams.streams.status import application_status, format_status

GRACE_MS = 60_000
EVENTS_PER_SECOND = 100
REPARTITION = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
CHANGELOG = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
WORKTREE = str(Path(__file__).resolve().parents[2])


def append_input(root: str, events: int, seed: int, batches: int = 1) -> None:
    generate(root, events, seed=seed, late_fraction=0.0, batches=batches, events_per_second=EVENTS_PER_SECOND, users=50)


def topology():
    return build_topology(grace_ms=GRACE_MS)


def config(root: str) -> StreamsConfig:
    return StreamsConfig.load({"application_id": APPLICATION_ID, "root": root, "commit_interval_ms": 100})


def run(spark, root: str) -> None:
    StreamsApp(topology(), config(root), spark=spark).run(until_caught_up=True, timeout_s=300)


def listing(root: str) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in Path(root).rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def ran(spark, tmp_path_factory) -> str:
    """Input versions 1 and 2 (600 events) processed; version 3 (300 events) appended after."""
    root = str(tmp_path_factory.mktemp("ran") / "root")
    append_input(root, 600, seed=0, batches=2)
    run(spark, root)
    append_input(root, 300, seed=1)
    return root


@pytest.fixture
def root(ran, tmp_path) -> str:
    copy = str(tmp_path / "root")
    shutil.copytree(ran, copy)
    return copy


def cli(*args, check=True, env=None):
    return subprocess.run(
        [sys.executable, "-m", "deltastreams.jobs.pageview", *args], capture_output=True, text=True, check=check, timeout=300, env=env, cwd=WORKTREE
    )


# -- status -----------------------------------------------------------------------------------------


@pytest.mark.spark
def test_status_of_a_stopped_application_shows_its_last_batch_and_the_lag_appended_since(root):
    before = listing(root)
    status = application_status(topology(), config(root))
    assert listing(root) == before  # read-only: nothing created, nothing rewritten
    assert status.state == "stopped"
    upstream, downstream = status.subtopologies
    assert upstream.last_batch.seq == 0 and upstream.last_batch.guarantee == "exactly_once"
    assert upstream.holder.epoch == 0 and upstream.holder.alive is False and upstream.holder.stopped_ms is not None
    (events,) = upstream.inputs
    assert (events.physical, events.kind, events.position, events.end) == ("pageview-events", "input", 2, 3)
    assert (events.lag_versions, events.lag_records) == (1, 300)
    (repartition,) = downstream.inputs
    assert (repartition.physical, repartition.kind, repartition.lag_versions, repartition.lag_records) == (REPARTITION, "repartition", 0, 0)
    (store,) = downstream.stores
    assert (store.changelog, store.tasks) == (CHANGELOG, downstream.tasks) and store.tasks == 2
    text = format_status(status)
    assert "pageview-events (input): position version 2, end version 3: lag 1 versions, 300 records" in text
    assert "not alive: stopped at" in text

    as_json = json.loads(cli("status", "--root", root, "--json", "--grace-ms", str(GRACE_MS)).stdout)
    assert as_json["state"] == "stopped"
    assert as_json["subtopologies"][0]["inputs"][0]["lag_records"] == 300
    generic = subprocess.run(
        [sys.executable, "-m", "deltastreams.jobs.status", "--root", root, "--application-id", APPLICATION_ID], capture_output=True, text=True, check=True, cwd=WORKTREE
    ).stdout
    assert generic.startswith(f"application pageview under {root}: STOPPED") and "lag 1 versions, 300 records" in generic
    assert listing(root) == before


@pytest.mark.spark
def test_status_while_the_application_runs_shows_it_held_and_alive_and_reset_refuses(root):
    env = {**os.environ, "PYTHONPATH": WORKTREE}
    driver = subprocess.Popen(
        [sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", root, "--commit-interval-ms", "100", "--grace-ms", str(GRACE_MS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=WORKTREE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while True:
            status = application_status(topology(), config(root))
            if status.state == "running" and status.subtopologies[0].inputs[0].position == 3:
                break
            assert driver.poll() is None, driver.stderr.read()
            assert time.monotonic() < deadline, format_status(status)
            time.sleep(0.5)
        upstream = status.subtopologies[0]
        assert upstream.last_batch.seq == 1 and upstream.holder.alive and upstream.holder.pid == driver.pid
        assert upstream.holder.epoch == 1  # the second instance to register
        assert upstream.inputs[0].lag_versions == 0
        with pytest.raises(ResetError, match="is running: sub-topology 0 is held by instance .* Stop every instance first"):
            reset(topology(), config(root), ResetTarget(earliest=True))
        assert Topic.exists(root, REPARTITION) and Topic.exists(root, CHANGELOG)
    finally:
        driver.send_signal(signal.SIGTERM)
        assert driver.wait(timeout=120) == 0
    status = application_status(topology(), config(root))
    assert status.state == "stopped" and status.subtopologies[0].holder.stopped_ms is not None


# -- reset ------------------------------------------------------------------------------------------


def latest_per_window(records: pa.Table) -> pd.DataFrame:
    frame = records.to_pandas().sort_values("offset")
    frame = frame.groupby(["category", "window_start", "window_end"], as_index=False).last()
    return frame[["category", "window_start", "window_end", "count"]].sort_values(["window_start", "category"]).reset_index(drop=True)


@pytest.mark.spark
def test_reset_to_earliest_then_a_run_gives_the_results_of_a_fresh_run(spark, root, tmp_path):
    from chispa import assert_df_equality

    report = reset(topology(), config(root), ResetTarget(earliest=True))
    assert report.positions == {"pageview-events": -1} and report.previous == {"pageview-events": 2}
    assert report.deleted_topics == [REPARTITION, CHANGELOG] and not Topic.exists(root, REPARTITION)
    assert report.kept_outputs == [OUTPUT_TOPIC, f"{APPLICATION_ID}-dlq"] and Topic.exists(root, OUTPUT_TOPIC)
    assert {p.name for p in (Path(root) / "state" / APPLICATION_ID).iterdir()} <= {"logs"}
    run(spark, root)

    fresh = str(tmp_path / "fresh")
    append_input(fresh, 600, seed=0, batches=2)
    append_input(fresh, 300, seed=1)
    run(spark, fresh)
    schema = "category string, window_start bigint, window_end bigint, count bigint"
    assert_df_equality(
        spark.createDataFrame(read_results(root).to_pandas(), schema=schema), spark.createDataFrame(read_results(fresh).to_pandas(), schema=schema)
    )


@pytest.mark.spark
def test_reset_to_a_version_reprocesses_only_the_later_versions(spark, root):
    from chispa import assert_df_equality

    old_ends = Topic.open(root, OUTPUT_TOPIC).end_offsets()
    out = cli("reset", "--root", root, "--to-version", "pageview-events=2", "--grace-ms", str(GRACE_MS))
    assert "input pageview-events: position version 2 (was version 2)" in out.stdout
    assert "kept output topics: pageview-windowed-counts" in out.stdout
    run(spark, root)
    raw = read_results(root, raw=True)
    new = raw.filter(pc.greater_equal(raw["offset"], pa.array([old_ends.get(p, 0) for p in raw["partition"].to_pylist()], pa.int64())))
    # Only version 3's events, counted from empty state (no drops: nothing is late).
    events = generate_events(300, seed=1, late_fraction=0.0, first_index=600, events_per_second=EVENTS_PER_SECOND, users=50)
    views = pd.DataFrame({"category": events["value"].combine_chunks().field("category").to_pylist(), "duration": events["value"].combine_chunks().field("duration_s").to_pylist(), "ts": events["timestamp"].to_pylist()})
    views = views[views["duration"] >= 30]
    views["window_start"] = views["ts"] - views["ts"] % 5000
    expected = views.groupby(["category", "window_start"], as_index=False).size().rename(columns={"size": "count"})
    expected["window_end"] = expected["window_start"] + 5000
    expected = expected[["category", "window_start", "window_end", "count"]].sort_values(["window_start", "category"]).reset_index(drop=True)
    schema = "category string, window_start bigint, window_end bigint, count bigint"
    assert_df_equality(spark.createDataFrame(latest_per_window(new), schema=schema), spark.createDataFrame(expected, schema=schema))


@pytest.mark.spark
def test_reset_to_a_timestamp_rereads_the_versions_committed_from_then_on(root):
    from deltastreams.sinks import open_table
    from deltastreams.sinks.topics import topic_uri

    history = {c["version"]: c["timestamp"] for c in open_table(topic_uri(root, "pageview-events")).history()}
    reset(topology(), config(root), ResetTarget(timestamp_ms=history[3]))
    assert application_status(topology(), config(root)).subtopologies[0].inputs[0].position == 2
    reset(topology(), config(root), ResetTarget(timestamp_ms=history[3] + 1))
    status = application_status(topology(), config(root))
    assert status.subtopologies[0].inputs[0].position == 3 and status.subtopologies[0].last_batch.seq == 2


@pytest.mark.spark
def test_reset_refuses_bad_targets_before_changing_anything(root):
    before = listing(root)
    with pytest.raises(ResetError, match="--to-version must name every input topic of pageview once \\(pageview-events\\): not input topics: other"):
        reset(topology(), config(root), ResetTarget(versions={"pageview-events": 1, "other": 2}))
    with pytest.raises(ResetError, match="the topic's versions are 0 to 3"):
        reset(topology(), config(root), ResetTarget(versions={"pageview-events": 9}))
    assert listing(root) == before
    out = cli("reset", "--root", root, "--to-timestamp", "yesterday", "--grace-ms", str(GRACE_MS), check=False)
    assert out.returncode == 1 and "error: --to-timestamp takes epoch milliseconds or an ISO 8601 time" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.spark
@pytest.mark.parametrize("point", RESET_CRASH_POINTS)
def test_a_reset_killed_at_any_point_completes_when_run_again(root, point):
    env = {**os.environ, "PYTHONPATH": WORKTREE, "DELTASTREAMS_CRASH_AT": point}
    killed = cli("reset", "--root", root, "--to-earliest", "--grace-ms", str(GRACE_MS), check=False, env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if point == "reset_after_fence":  # before the plan: nothing visible changed, the application may start
        status = application_status(topology(), config(root))
        assert status.state == "stopped" and status.subtopologies[0].inputs[0].position == 2
        assert Topic.exists(root, REPARTITION) and Topic.exists(root, CHANGELOG)
    else:  # past the point of no return: the application refuses to start until the reset is finished
        assert application_status(topology(), config(root)).state == "resetting"
        with pytest.raises(ConfigError, match="unfinished reset .* again to finish it"):
            StreamsApp(topology(), config(root)).start()
    report = reset(topology(), config(root), ResetTarget(latest=True))  # a rerun finishes the earlier reset first
    assert report.resumed == (point != "reset_after_fence")
    expected = -1 if report.resumed else 3
    status = application_status(topology(), config(root))
    assert status.state == "stopped" and [s.inputs[0].position for s in status.subtopologies][0] == expected
    assert [s.last_batch.seq for s in status.subtopologies] == [1, 1]
    assert not Topic.exists(root, REPARTITION) and not Topic.exists(root, CHANGELOG)
    assert {p.name for p in (Path(root) / "state" / APPLICATION_ID).iterdir()} <= {"logs"}
