"""Bad input's ways out stay exactly once when real processes are killed (kill -9) between the
skip and the next commit: the pageview job as users run it (``python -m deltastreams.jobs.pageview``),
its input appended to by another writer, checked against the pandas reference of the job's rule
(:mod:`deltastreams.devtools.harness.pageview_reference`) computed from the good records alone.

1. A null-partition append (version 2); the job with ``on_bad_record = fail`` stops there, naming
   the skip command; that command is killed after fencing, then run again.
2. An append whose offsets are taken (version 4) beside good appends; the job with the default
   ``dlq`` is killed before its first batch is decided (``after_consolidate``), then after it is
   decided and before it is published (``after_commit``), then runs to the end.
The results equal the reference; the dead-letter topic holds version 4's records once, and none of
the skipped file's.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from deltastreams.devtools.harness.pageview_reference import final_counts
from deltastreams.jobs.pageview import APPLICATION_ID, generate, read_results
from deltastreams.sinks import Topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TOPIC = "pageview-events"


def bad_rows(n: int, *, partition, offsets) -> pa.Table:
    return pa.table(
        {
            "partition": pa.array([partition] * n, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array([1_700_000_000_000 + i for i in range(n)], pa.int64()),
            "user_id": [f"outside-{i}" for i in range(n)],
            "page_id": ["p"] * n,
            "category": ["sports"] * n,
            "duration_s": pa.array([45] * n, pa.int32()),
        }
    )


def run(command: list[str], *, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DELTASTREAMS_CRASH_AT", None)
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=600)
    finally:
        try:  # the JVM and the task hosts go with their driver; make sure of it
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def job(root: str, policy: str) -> list[str]:
    return [
        sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", root, "--until-caught-up", "--commit-interval-ms", "100",
        "--timeout-s", "300", "--set", f"on_bad_record={policy}", "--set", "retention.enabled=false",
    ]  # fmt: skip


def good_events(root: str, versions) -> "pd.DataFrame":  # noqa: F821
    topic = Topic.open(root, TOPIC)
    frames = [topic.read(after_version=v - 1, up_to_version=v) for v in versions]
    rows = pa.concat_tables(frames)
    value = rows.column("value").combine_chunks()
    return pa.table(
        {
            "partition": rows["partition"], "offset": rows["offset"], "timestamp": rows["timestamp"],
            "category": value.field("category"), "duration_s": value.field("duration_s"),
        }
    ).to_pandas()  # fmt: skip


def test_skip_and_dead_letters_stay_exactly_once_across_kill_9(tmp_path):
    root = str(tmp_path)
    uri = f"{root}/topics/{TOPIC}"
    generate(root, 300, seed=1)  # version 1
    write_deltalake(uri, bad_rows(3, partition=None, offsets=[None] * 3), mode="append")  # version 2: null partition
    generate(root, 200, seed=2)  # version 3

    stopped = run(job(root, "fail"))
    assert stopped.returncode == 1, stopped.stderr
    assert "error: input topic 'pageview-events' version 2, file partition=__HIVE_DEFAULT_PARTITION__/" in stopped.stderr
    command = next(part for part in stopped.stderr.split("`") if part.startswith("python -m deltastreams.jobs.skip"))
    skip = [sys.executable, *shlex.split(command)[1:]]
    killed = run(skip, crash_at="skip_after_fence")
    assert killed.returncode == -signal.SIGKILL and "crash point skip_after_fence reached" in killed.stderr
    done = run(skip)
    assert done.returncode == 0 and "pageview skips pageview-events version 2: file partition=__HIVE_DEFAULT_PARTITION__/" in done.stdout, done.stderr

    write_deltalake(uri, bad_rows(2, partition=0, offsets=[0, 1]), mode="append")  # version 4: offsets taken
    generate(root, 100, seed=3)  # version 5
    for point in ("after_consolidate", "after_commit"):
        crashed = run(job(root, "dlq"), crash_at=point)
        assert crashed.returncode == -signal.SIGKILL and f"crash point {point} reached" in crashed.stderr, crashed.stderr
    finished = run(job(root, "dlq"))
    assert finished.returncode == 0, finished.stderr
    # The batch decided before the kill is published by the restart, which says what went where.
    assert "decided before the last stop, published now: 2 records went to the dead-letter topic pageview-dlq" in finished.stderr, finished.stderr

    expected = final_counts(good_events(root, (1, 3, 5)), window_ms=5000, grace_ms=10_000, min_duration_s=30, partitions=3)
    got = read_results(root).to_pandas()
    key = ["category", "window_start"]
    assert got.sort_values(key).reset_index(drop=True)[["category", "window_start", "count"]].to_dict("records") == (
        expected.sort_values(key).reset_index(drop=True)[["category", "window_start", "count"]].to_dict("records")
    )
    dead = Topic.open(root, f"{APPLICATION_ID}-dlq").read().column("value").to_pylist()
    assert len(dead) == 2, dead  # version 4's records, once; none of the skipped file's
    assert all(d["reason"].startswith("pageview-events version 4, file partition=0/") and "those offsets are taken" in d["reason"] for d in dead)
    assert sorted(json.loads(d["value"])["user_id"] for d in dead) == ["outside-0", "outside-1"]
    status = run([sys.executable, "-m", "deltastreams.jobs.pageview", "status", "--root", root])
    assert "skipped: pageview-events version 2, file partition=__HIVE_DEFAULT_PARTITION__/" in status.stdout, status.stdout + status.stderr
