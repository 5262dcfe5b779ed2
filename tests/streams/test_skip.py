"""``skip`` (:mod:`deltastreams.streams.skip`) without Spark: what it records, what it refuses, and a
kill -9 between two transaction logs, finished by running it again. The transaction logs are
written here with the protocol's own API, as two sub-topologies of an application that stopped
after consuming version 1 of its input would have left them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import create_topic
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog
from deltastreams.streams._internal.runtime import skips
from deltastreams.streams._internal.runtime.heartbeat import Heartbeat
from deltastreams.streams.skip import SkipError, skip
from deltastreams.streams.status import transaction_log_uri

APP = "counter"


@pytest.fixture
def stopped_app(tmp_path):
    """Input version 1 consumed by sub-topology 0 (sub-topology 1 reads only a repartition topic);
    version 2 a null-partition append, version 3 a good one. Returns (root, bad file's path)."""
    root = str(tmp_path)
    topic = create_topic(root, "events", partitions=2, key_type=pa.string(), value_type=pa.int64())
    topic.append(pa.table({"key": ["a"], "value": pa.array([1], pa.int64()), "timestamp": pa.array([1], pa.int64())}))
    before = set(DeltaTable(topic.uri).get_add_actions(flatten=True).column("path").to_pylist())
    rows = pa.table({"partition": pa.array([None], pa.int32()), "offset": pa.array([None], pa.int64()), "timestamp": pa.array([2], pa.int64()), "key": ["x"], "value": pa.array([2], pa.int64())})
    write_deltalake(topic.uri, rows, mode="append")
    (bad,) = set(DeltaTable(topic.uri).get_add_actions(flatten=True).column("path").to_pylist()) - before
    topic.append(pa.table({"key": ["b"], "value": pa.array([3], pa.int64()), "timestamp": pa.array([3], pa.int64())}))
    for sub, sources in ((0, {"events": (-1, 1)}), (1, {"counter-x-repartition": (-1, 0)})):
        log = TransactionLog(transaction_log_uri(root, APP, sub), f"{APP}/subtopology-{sub}")
        log.register("the-stopped-instance")
        log.decide(DecidedBatch(seq=0, epoch=log.epoch, sources=sources, tables={}))
    return root, bad


def config(root: str) -> StreamsConfig:
    return StreamsConfig.load({"application_id": APP, "root": root})


def recorded(root: str, sub: int) -> list[skips.Skip]:
    return skips.parse(TransactionLog(transaction_log_uri(root, APP, sub), f"{APP}/subtopology-{sub}").property(skips.PROPERTY))


def cli(root: str, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DELTASTREAMS_CRASH_AT"}
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "deltastreams.jobs.skip", "--root", root, "--application-id", APP, *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_a_skip_is_recorded_in_every_log_with_the_reason_and_keeps_positions(stopped_app):
    root, bad = stopped_app
    report = skip(config(root), "events", 2, bad)
    assert sorted(report.recorded) == [0, 1] and report.recorded[0] == 1  # the next seq: outputs' txn versions keep increasing
    for sub in (0, 1):
        (held,) = recorded(root, sub)
        assert (held.topic, held.version, held.file) == ("events", 2, bad) and held.reason.startswith("has a null partition")
    last = TransactionLog(transaction_log_uri(root, APP, 0), f"{APP}/subtopology-0").last_decided()
    assert last.sources == {"events": (1, 1)} and last.tables == {}  # positions kept, nothing published


def test_a_skip_killed_between_two_logs_is_finished_by_running_it_again(stopped_app):
    root, bad = stopped_app
    killed = cli(root, "--topic", "events", "--version", "2", "--file", bad, crash_at="skip_after_decide")
    assert killed.returncode == -signal.SIGKILL and "crash point skip_after_decide reached" in killed.stderr
    assert len(recorded(root, 0)) == 1 and recorded(root, 1) == []  # one log has it
    # An application starting now reads the union of its logs: it skips the file already.
    union = skips.Skips.from_properties({sub: TransactionLog(transaction_log_uri(root, APP, sub), "x").property(skips.PROPERTY) for sub in (0, 1)})
    assert union.covering("events", 2, bad) is not None
    again = cli(root, "--topic", "events", "--version", "2", "--file", bad)
    assert again.returncode == 0, again.stderr
    assert "recorded in the transaction logs of sub-topologies 1 (batch 1)" in again.stdout and "already recorded for sub-topologies 0" in again.stdout
    assert [len(recorded(root, sub)) for sub in (0, 1)] == [1, 1]


def test_what_cannot_be_skipped_is_refused_before_anything_changes(stopped_app):
    root, bad = stopped_app
    for version, file, message in (
        (9, None, "has versions 0 to 3: there is no version 9"),
        (2, "partition=0/nope.parquet", "version 2 of 'events' added no file partition=0/nope.parquet; the files it added:"),
        (1, None, "has consumed 'events' up to version 1 already: version 1 is behind it"),
    ):
        with pytest.raises(SkipError, match=message):
            skip(config(root), "events", version, file)
    with pytest.raises(SkipError, match="topic 'other' does not exist"):
        skip(config(root), "other", 1)
    assert recorded(root, 0) == [] and recorded(root, 1) == []


def test_a_live_holder_is_refused_unless_forced(stopped_app):
    root, bad = stopped_app
    beat = Heartbeat(root, APP, "the-stopped-instance", lambda: {0: 0, 1: 0})
    beat.start()
    try:
        refused = cli(root, "--topic", "events", "--version", "2", "--file", bad)
        assert refused.returncode == 1 and "is running: sub-topology 0 is held by instance the-stopped-instance" in refused.stderr
        assert "Traceback" not in refused.stderr and recorded(root, 0) == []
        forced = cli(root, "--topic", "events", "--version", "2", "--force")  # every file of version 2
        assert forced.returncode == 0, forced.stderr
    finally:
        beat.stop()
    (held,) = recorded(root, 0)
    assert held.file is None and held.covers("events", 2, bad)
