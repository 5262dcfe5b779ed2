"""Exclusive commits on a real object store (SeaweedFS): racing writers with retries off, exactly
one wins; the transaction log fences a zombie; the start-up probe passes here and refuses, with a
clear message, a store that lets a commit overwrite another."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from deltalake.exceptions import CommitFailedError

from deltastreams.conf.errors import ConfigError, ProducerFencedError
from deltastreams.sinks import Topic, commit_files, create_topic, require_exclusive_commits
from deltastreams.sinks.retention import optimize_files
from deltastreams.sinks._internal import commit_probe
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog


def test_racing_writers_with_retries_off_exactly_one_wins(s3_root):
    """Two writers loaded at the same version each commit their own file as that version + 1, at
    the same instant: the store must let exactly one through (what offsets and fencing rely on)."""
    topic = create_topic(s3_root, "raced", partitions=1, key_type=pa.string(), value_type=pa.string())
    rows = pa.table({"key": ["k"], "value": ["v"], "timestamp": pa.array([1], pa.int64())})
    for round_ in range(5):
        writers = [Topic.open(s3_root, "raced") for _ in range(2)]
        tables = [w.delta_table() for w in writers]
        start = tables[0].version()
        files = [w.prepare_files(topic.layout.to_table_columns(rows, "raced"), w.end_offsets()) for w in writers]
        barrier = threading.Barrier(2)
        outcomes: list[object] = [None, None]

        def commit(i: int) -> None:
            barrier.wait()
            try:
                outcomes[i] = commit_files(tables[i], files[i], schema=pa.schema(tables[i].schema()), exclusive=True)
            except CommitFailedError as e:
                outcomes[i] = e

        threads = [threading.Thread(target=commit, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [o for o in outcomes if isinstance(o, int)]
        assert winners == [start + 1], f"round {round_}: {outcomes}"
        assert sum(isinstance(o, CommitFailedError) for o in outcomes) == 1
        assert Topic.open(s3_root, "raced").version() == start + 1


def test_a_zombie_is_fenced_by_the_transaction_log_on_s3(s3_root):
    uri = f"{s3_root}/transactions/app/0"
    zombie, successor = TransactionLog(uri, "app-0"), TransactionLog(uri, "app-0")
    assert zombie.register("zombie") == 0
    assert successor.register("successor") == 1
    with pytest.raises(ProducerFencedError, match="was fenced"):
        zombie.decide(DecidedBatch(seq=0, epoch=0, sources={}))
    successor.decide(DecidedBatch(seq=0, epoch=1, sources={}))
    assert successor.last_decided().epoch == 1


def test_the_start_up_probe_passes_on_seaweedfs_and_leaves_nothing(s3_server, s3_root):
    require_exclusive_commits(s3_root)
    probes = f"{s3_root[len('s3://'):]}/{commit_probe.PROBE_DIR}"
    assert s3_server.filesystem().get_file_info(pafs.FileSelector(probes, recursive=True, allow_not_found=True)) == []


def test_a_store_that_lets_a_commit_overwrite_another_is_refused(s3_root, monkeypatch):
    """No store at hand ignores If-None-Match, so the second commit's rejection is taken away:
    the probe must then see both commits succeed and refuse with a message naming the cause."""
    commits = []
    monkeypatch.setattr(commit_probe, "_commit", lambda table: commits.append(table.version()))
    with pytest.raises(ConfigError, match="accepted two commits of the same Delta version") as raised:
        require_exclusive_commits(s3_root)
    assert raised.value.setting == "processing_guarantee" and "at_least_once" in str(raised.value)
    assert commits == [0, 0]


def test_retention_commits_written_by_us_are_exclusive_on_the_store(s3_root):
    """Optimize commits its own commit file (recorded as OPTIMIZE) through the store's
    If-None-Match: delta-rs reads it, and a second commit of that version is refused."""
    topic = create_topic(s3_root, "optimized", partitions=1, key_type=pa.string(), value_type=pa.string())
    for i in range(3):
        topic.append(pa.table({"key": [f"k{i}"], "value": ["v"], "timestamp": pa.array([i], pa.int64())}))
    stale = topic.delta_table()
    result = optimize_files(topic.delta_table(), min_files=2, target_file_bytes=1 << 20)
    assert result.version == stale.version() + 1 and result.files_removed == 3
    assert topic.delta_table().history(1)[0]["operation"] == "OPTIMIZE"
    assert topic.read()["key"].to_pylist() == ["k0", "k1", "k2"]
    assert optimize_files(stale, min_files=2, target_file_bytes=1 << 20).conflict  # loaded before: its commit must lose
    assert topic.version() == result.version
