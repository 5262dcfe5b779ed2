"""Rescaling a stopped application's repartition topic and changelog (``deltastreams.jobs.rescale``), beyond Kafka.

The pageview count runs part of its input with P partitions and is stopped by a failure right after
its upstream sub-topology committed a batch (so the repartition topic holds records not yet
consumed, as a crash leaves it); the rescale moves to N partitions; the rest of the input runs;
the final counts must equal an independent computation of the rule (deltastreams.streams.rescale's docstring),
written here without the project's processing code.
"""

from __future__ import annotations

import heapq
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs.pageview import APPLICATION_ID, build_topology, input_topic, read_results
from deltastreams.jobs.pageview_data import VALUE_TYPE
from deltastreams.sinks import Topic, partition_for
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.errors import DeltaStreamsError
from deltastreams.streams.rescale import RescaleError, rescale
from deltastreams.streams._internal.runtime.heartbeat import Heartbeat
from deltastreams.streams.runtime import RESCALE_CRASH_POINTS as RESCALE_POINTS
from deltastreams.streams.status import holders

WINDOW_MS, GRACE_MS = 5000, 20_000
T0 = 1_700_000_000_000
CATEGORIES = [f"cat-{i:02d}" for i in range(12)]
PER_VERSION = 600
REPARTITION = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
CHANGELOG = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"


# -- input -----------------------------------------------------------------------------------------


def events(version: int, seed: int) -> pd.DataFrame:
    """``PER_VERSION`` pageviews of input version ``version`` (1, 2, 3): each category runs on a clock
    of its own (category i is ``i * 2.5 s`` ahead), a quarter of the events come up to 30 s late,
    half are too short to count. Tasks that hold different categories so have different stream
    times, and which categories share a task decides what is late."""
    rng = np.random.default_rng([seed, version])
    index = np.arange((version - 1) * PER_VERSION, version * PER_VERSION)
    cat = rng.integers(0, len(CATEGORIES), PER_VERSION)
    ts = T0 + index * 40 + cat * 2500 - np.where(rng.random(PER_VERSION) < 0.25, rng.integers(0, 30_000, PER_VERSION), 0)
    return pd.DataFrame(
        {
            "user_id": [f"user-{u}" for u in rng.integers(0, 500, PER_VERSION)],
            "page_id": [f"page-{p}" for p in rng.integers(0, 50, PER_VERSION)],
            "category": [CATEGORIES[c] for c in cat],
            "duration_s": rng.integers(0, 60, PER_VERSION).astype(np.int32),
            "timestamp": ts.astype(np.int64),
        }
    )


def append(root: str, frame: pd.DataFrame) -> None:
    value = pa.StructArray.from_arrays(
        [pa.array(frame[c].tolist(), t.type) for c, t in zip(["user_id", "page_id", "category", "duration_s"], VALUE_TYPE, strict=True)],
        fields=list(VALUE_TYPE),
    )
    input_topic(root, partitions=1).append(pa.table({"key": frame["user_id"].tolist(), "value": value, "timestamp": frame["timestamp"].tolist()}))


# -- the independent computation ---------------------------------------------------------------------


def expected_counts(consumed, unconsumed, later, p_old: int, n_new: int, *, rule: str = "keys") -> pd.DataFrame:
    """Final count per window. ``consumed``: input the P tasks processed before the stop;
    ``unconsumed``: input whose repartition records were committed but not consumed; ``later``: input
    appended after the rescale. Tasks: stream time = running max; a record counts for its window
    unless ``start + size + grace <= stream time``; a window's timestamp is the largest it counted.
    At the rescale, a task keeps only open windows (purged: closed ones), each key's windows go to
    partition_for(key, N), and a new task's stream time (``rule``) is
    - ``keys``: the largest window timestamp its keys bring (what the rescale promises),
    - ``old``: the largest old stream time of the tasks its keys come from (a wrong rule, to show the
      data tells them apart), ``none``: no stream time (another wrong rule)."""

    def kept(frame):
        return frame[frame["duration_s"] >= 30]

    counts: dict[tuple[str, int], int] = {}
    stamps: dict[tuple[str, int], int] = {}
    final: dict[tuple[str, int], int] = {}

    def process(records, stream_time: dict[int, int], task_of) -> None:
        for cat, ts in records:
            task = task_of(cat)
            stream_time[task] = max(stream_time.get(task, -1), ts)
            start = ts - ts % WINDOW_MS
            if start + WINDOW_MS + GRACE_MS <= stream_time[task]:
                continue  # late: dropped
            counts[(cat, start)] = counts.get((cat, start), 0) + 1
            stamps[(cat, start)] = max(stamps.get((cat, start), -1), ts)
            final[(cat, start)] = counts[(cat, start)]

    old_task = lambda cat: partition_for(cat.encode(), p_old)  # noqa: E731
    new_task = lambda cat: partition_for(cat.encode(), n_new)  # noqa: E731
    old_times: dict[int, int] = {}
    process(list(zip(kept(consumed)["category"], kept(consumed)["timestamp"], strict=True)), old_times, old_task)
    # The rescale: open windows move, closed ones were purged.
    for window in list(counts):
        if window[1] + WINDOW_MS + GRACE_MS <= old_times[old_task(window[0])]:
            del counts[window], stamps[window]
    new_times: dict[int, int] = {}
    for (cat, start), ts in stamps.items():
        q = new_task(cat)
        if rule == "keys":
            new_times[q] = max(new_times.get(q, -1), ts)
        elif rule == "old":
            new_times[q] = max(new_times.get(q, -1), old_times[old_task(cat)])
    # Unconsumed records: per new partition, the old partitions' sequences merged by smallest head timestamp.
    rest = kept(unconsumed)
    ordered = []
    for q in range(n_new):
        mine = rest[[new_task(c) == q for c in rest["category"]]]
        sequences = [
            [(int(ts), cat) for cat, ts in zip(seq["category"], seq["timestamp"], strict=True)]
            for _, seq in sorted(mine.groupby(mine["category"].map(old_task)), key=lambda g: g[0])
        ]
        ordered += [(cat, ts) for ts, cat in heapq.merge(*sequences, key=lambda r: r[0])]
    process(ordered, new_times, new_task)
    process(list(zip(kept(later)["category"], kept(later)["timestamp"], strict=True)), new_times, new_task)
    frame = pd.DataFrame([(c, s, s + WINDOW_MS, n) for (c, s), n in final.items()], columns=["category", "window_start", "window_end", "count"])
    return frame.sort_values(["window_start", "category"]).reset_index(drop=True)


# -- running the application in-process -------------------------------------------------------------


def config(root: str, partitions: int) -> StreamsConfig:
    return StreamsConfig.load(
        {
            "application_id": APPLICATION_ID,
            "root": root,
            "num_partitions": partitions,
            "commit_interval_ms": 100,
            "max_records_per_batch": PER_VERSION,
            "state_dir": str(Path(root) / "state"),
        }
    )


def topology():
    return build_topology(window_ms=WINDOW_MS, grace_ms=GRACE_MS)


def run_until_stopped_after_upstream_commit(spark, root: str, partitions: int, monkeypatch) -> None:
    """Run input versions 1 and 2 (one trigger each); fail the process right after the upstream
    sub-topology decided trigger 2's batch (the third decision): its repartition records are then
    committed (rolled forward by the next start, or the rescale) and not consumed."""
    from deltastreams.streams._internal.runtime import committer

    reached = {"n": 0}

    def failing(point: str) -> None:
        if point == "after_commit":
            reached["n"] += 1
            if reached["n"] == 3:
                raise RuntimeError("simulated crash after the upstream commit")

    monkeypatch.setattr(committer, "crash_point", failing)
    app = StreamsApp(topology(), config(root, partitions), spark=spark)
    with pytest.raises(DeltaStreamsError):
        app.run(until_caught_up=True, timeout_s=300)
    monkeypatch.undo()


def run_to_the_end(spark, root: str, partitions: int) -> StreamsApp:
    app = StreamsApp(topology(), config(root, partitions), spark=spark)
    app.run(until_caught_up=True, timeout_s=300)
    return app


RESULT_SCHEMA = "category string, window_start bigint, window_end bigint, count bigint"


def results_frame(spark, root: str):
    return spark.createDataFrame(read_results(root).to_pandas(), schema=RESULT_SCHEMA)


def expected_frame(spark, frame: pd.DataFrame):
    return spark.createDataFrame(frame, schema=RESULT_SCHEMA)


def prepare(spark, root: str, p_old: int, monkeypatch, seed: int):
    v1, v2, v3 = (events(v, seed) for v in (1, 2, 3))
    append(root, v1)
    append(root, v2)
    run_until_stopped_after_upstream_commit(spark, root, p_old, monkeypatch)
    return v1, v2, v3


# -- tests -----------------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(("p_old", "n_new"), [(2, 5), (4, 1)])
def test_rescaled_run_matches_an_independent_computation_of_the_rule(spark, tmp_path, monkeypatch, p_old, n_new):
    from chispa import assert_df_equality

    root = str(tmp_path)
    v1, v2, v3 = prepare(spark, root, p_old, monkeypatch, seed=p_old)
    report = rescale(topology(), config(root, p_old), n_new)
    assert report.repartition_records == {REPARTITION: int((v2["duration_s"] >= 30).sum())}  # the whole of trigger 2's output
    assert Topic.open(root, REPARTITION).partitions == n_new and Topic.open(root, CHANGELOG).partitions == n_new
    append(root, v3)
    app = run_to_the_end(spark, root, p_old)  # the old setting: the topics' partitions win
    assert app.registry.tasks(app.topology.subtopologies[1]) == n_new
    expected = expected_counts(v1, v2, v3, p_old, n_new)
    # The data tells the rule apart from plausible wrong ones (scaling down to one task, the old
    # tasks' largest stream time is its keys' largest timestamp: the same rule there).
    if n_new > p_old:
        assert not expected.equals(expected_counts(v1, v2, v3, p_old, n_new, rule="old"))
    assert not expected.equals(expected_counts(v1, v2, v3, p_old, n_new, rule="none"))
    assert_df_equality(results_frame(spark, root), expected_frame(spark, expected), ignore_row_order=True, ignore_nullable=True)


def logical_state(root: str) -> dict:
    """What the rescale produced, independent of files and table ids: the repartition records per
    partition in offset order, the changelog's state per partition, the downstream's position."""
    from deltastreams.sinks.transaction import decided_batches

    rep = Topic.open(root, REPARTITION).read().to_pandas()
    log = Topic.open(root, CHANGELOG).read().to_pandas()
    state = {}
    for part, rows in log.groupby("partition"):
        replayed = {}
        for k, v in zip(rows["key"], rows["value"], strict=True):
            if v is None:
                replayed.pop(k, None)
            else:
                replayed[k] = v
        state[int(part)] = replayed
    last = decided_batches(f"{root}/transactions/{APPLICATION_ID}/subtopology-1")[-1]
    return {
        "repartition": [(int(p), [(r.timestamp, r.key, str(r.value)) for r in rows.itertuples()]) for p, rows in rep.groupby("partition")],
        "changelog": state,
        "position": last.sources[REPARTITION.removeprefix(f"{APPLICATION_ID}-")][1],
        "upstream_txn": Topic.open(root, REPARTITION).delta_table().transaction_version(f"{APPLICATION_ID}/subtopology-0"),
    }


@contextmanager
def alive_holder(root: str, partitions: int):
    """The instance holding the application's logs, alive again: its heartbeat fresh and not
    marked stopped (what a running instance writes)."""
    held = holders(topology(), config(root, partitions))
    instance = held[0].instance
    beat = Heartbeat(root, APPLICATION_ID, instance, lambda: {sub: h.epoch for sub, h in held.items() if h is not None and h.instance == instance})
    beat.start()
    try:
        yield
    finally:
        beat.stop()


def rescale_cli(root: str, partitions: int, *, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DELTASTREAMS_CRASH_AT", None)
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "deltastreams.jobs.rescale", "--root", root, "--application-id", APPLICATION_ID, "--partitions", str(partitions)],
        capture_output=True, text=True, env=env, timeout=300,
    )


@pytest.mark.spark
@pytest.mark.slow
def test_kill_9_at_every_rescale_point_then_rerun_gives_the_same_rescale_and_results(spark, tmp_path, monkeypatch):
    """One root, killed at each point in turn (every rerun but the last is killed too, so a rerun
    that resumes a switch is killed as well), must end where a crash-free rescale of a copy does."""
    from chispa import assert_df_equality

    p_old, n_new = 3, 4
    root = str(tmp_path / "killed")
    v1, v2, v3 = prepare(spark, root, p_old, monkeypatch, seed=7)
    with alive_holder(root, p_old), pytest.raises(RescaleError, match="is running: sub-topology 0 is held by instance"):
        rescale(topology(), config(root, p_old), n_new)
    assert not (Path(root) / "rescale").exists() and Topic.open(root, REPARTITION).partitions == p_old  # nothing changed
    clean = str(tmp_path / "clean")  # the same run again (a copy would not do: transaction logs name their tables' paths)
    prepare(spark, clean, p_old, monkeypatch, seed=7)
    rescale(topology(), config(clean, p_old), n_new)
    reference = logical_state(clean)
    assert reference["position"] == 0 and sum(len(r) for _, r in reference["repartition"]) == int((v2["duration_s"] >= 30).sum())
    assert reference["upstream_txn"] is not None  # the upstream's last batch is known published: never published twice
    for point in RESCALE_POINTS[:4] + ("rescale_during_switch@2",) + RESCALE_POINTS[4:]:
        killed = rescale_cli(root, n_new, crash_at=point)
        assert killed.returncode == -9, (point, killed.stderr)
        assert f"crash point {point.split('@')[0]} reached" in killed.stderr
        if point != "rescale_after_recover" or (Path(root) / "rescale" / APPLICATION_ID / "plan.json").exists():
            with pytest.raises(DeltaStreamsError, match="unfinished rescale"):  # the application refuses to start
                StreamsApp(topology(), config(root, p_old), spark=spark).start()
    assert rescale_cli(root, n_new).returncode == 0
    assert not (Path(root) / "rescale" / APPLICATION_ID / "plan.json").exists()
    assert logical_state(root) == reference
    append(root, v3)
    run_to_the_end(spark, root, p_old)
    expected = expected_counts(v1, v2, v3, p_old, n_new)
    assert_df_equality(results_frame(spark, root), expected_frame(spark, expected), ignore_row_order=True, ignore_nullable=True)


def test_bad_input_is_refused_with_a_clear_message(tmp_path):
    missing = rescale_cli(str(tmp_path / "nowhere"), 3)
    assert missing.returncode == 2 and "root" in missing.stderr and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    zero = rescale_cli(str(tmp_path), 0)
    assert zero.returncode == 2 and "--partitions must be at least 1, got 0" in zero.stderr
    root = str(tmp_path)
    settings = StreamsConfig.load({"application_id": APPLICATION_ID, "root": root})
    with pytest.raises(RescaleError, match=f"no application '{APPLICATION_ID}' under"):
        rescale(topology(), settings, 3)
    with pytest.raises(RescaleError, match="at least 1, got -2"):
        rescale(topology(), settings, -2)
    with pytest.raises(RescaleError, match="suppression buffers cannot be rescaled|cannot be rescaled: only the stores"):
        rescale(build_topology(emit="final"), settings, 3)  # emit-final keeps a buffer of its own
    with pytest.raises(RescaleError, match="object store"):
        rescale(topology(), StreamsConfig.load({"application_id": APPLICATION_ID, "root": "s3://bucket/x"}), 3)


@pytest.mark.spark
def test_rescale_right_after_a_clean_stop_goes_ahead_and_only_a_live_holder_stops_it(spark, tmp_path):
    """Rescale, reset, skip and status judge liveness one way: the holder's heartbeat and its
    stopped mark. A run that stopped cleanly a moment ago is stopped (no waiting for its last
    commit to age); an instance alive is refused, naming it; --force is for one known dead."""
    from deltastreams.streams.status import application_status

    root = str(tmp_path)
    append(root, events(1, seed=5))
    run_to_the_end(spark, root, 2)  # a clean stop: the heartbeat is marked stopped
    assert application_status(topology(), config(root, 2)).state == "stopped"
    with alive_holder(root, 2), pytest.raises(RescaleError, match=r"is running: sub-topology 0 is held by instance \w+ .* --force"):
        rescale(topology(), config(root, 2), 3)
    assert not (Path(root) / "rescale").exists()  # refused before anything changed
    report = rescale(topology(), config(root, 2), 3)  # right away: no commit age to wait for
    assert report.partitions == 3 and Topic.open(root, REPARTITION).partitions == 3
    with alive_holder(root, 3):
        forced = rescale(topology(), config(root, 3), 2, force=True)  # known dead: fenced and rescaled
    assert forced.partitions == 2 and Topic.open(root, REPARTITION).partitions == 2
