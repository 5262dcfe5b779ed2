"""Topic.append costs the same however long the topic's log (issue 42): counted in what an append
reads and writes, not timed. A topic of 2,000 versions is built in a second by writing its commit
files directly (their data files are never read by an append)."""

from __future__ import annotations

import contextlib
import shutil
from collections import Counter

import obstore
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable, write_deltalake

from deltastreams.conf.errors import CommitError
from deltastreams.sinks import DataFile, Topic, append_at, create_topic, open_table, partition_for
from deltastreams.sinks._internal import delta_log, log_head

ROWS = pa.table({"key": ["a", "b", "c", "d"], "value": pa.array([1, 2, 3, 4], pa.int64()), "timestamp": pa.array([0, 0, 0, 0], pa.int64())})


def long_log(root, name: str, versions: int) -> Topic:
    """A 2-partition topic of ``versions`` versions, each adding one file of 10 records per
    partition, with a checkpoint at every 100th version (as the project's writers leave it)."""
    topic = create_topic(root, name, partitions=2, key_type=pa.string(), value_type=pa.int64())
    for version in range(1, versions + 1):
        files = [DataFile(f"partition={p}/part-{version:020d}-{p}.parquet", p, 10, (version - 1) * 10, version * 10 - 1, size=1000) for p in (0, 1)]
        assert append_at(topic.uri, version - 1, files) == version
        if version % 100 == 0:
            open_table(topic.uri, version).create_checkpoint()
    return topic


@contextlib.contextmanager
def counted(monkeypatch):
    """Counts, while open, what touches a table's log: table loads and delta-rs commits (each
    lists the log), listings by pyarrow, commit files read, commit files written."""
    counts: Counter = Counter()

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as m:
        m.setattr(DeltaTable, "__init__", counting("table loads", DeltaTable.__init__))
        m.setattr(DeltaTable, "update_incremental", counting("table loads", DeltaTable.update_incremental))
        m.setattr(DeltaTable, "create_write_transaction", counting("delta-rs commits", DeltaTable.create_write_transaction))
        m.setattr(pafs, "FileSelector", counting("listings", pafs.FileSelector))
        m.setattr(delta_log, "read_commit", counting("commit files read", delta_log.read_commit))
        m.setattr(log_head, "read_commit", counting("commit files read", log_head.read_commit))
        m.setattr(obstore, "put", counting("commit files written", obstore.put))
        yield counts


def cost_of_appends(topic: Topic, monkeypatch, appends: int = 5) -> Counter:
    topic.append(ROWS)  # a process's first append to a topic loads it
    with counted(monkeypatch) as counts:
        for _ in range(appends):
            topic.append(ROWS)
    return counts


def test_an_append_reads_the_same_at_version_10_and_at_version_2000(tmp_path, monkeypatch):
    short, long = long_log(tmp_path, "short", 10), long_log(tmp_path, "long", 2000)
    at_10, at_2000 = cost_of_appends(short, monkeypatch), cost_of_appends(long, monkeypatch)
    # No table load, no listing, no commit file read: one conditional write per append.
    assert at_10 == at_2000 == Counter({"commit files written": 5})
    keys_per_partition = Counter(partition_for(k.encode(), 2) for k in ROWS["key"].to_pylist())
    assert long.version() == 2006 and long.end_offsets() == {p: 20000 + 6 * keys_per_partition[p] for p in (0, 1)}


def test_after_another_writer_an_append_reads_only_the_commits_written_since(tmp_path, monkeypatch):
    topic = long_log(tmp_path, "events", 300)
    topic.append(ROWS)
    for _ in range(3):  # a pandas user's appends, without offsets: the log orders them
        write_deltalake(topic.uri, pa.table({"partition": pa.array([1], pa.int32()), "offset": pa.array([None], pa.int64()), "timestamp": [0], "key": ["x"], "value": [9]}), mode="append")
    with counted(monkeypatch) as counts:
        result = topic.append(pa.table({"partition": pa.array([1], pa.int32()), "key": ["y"], "value": [10], "timestamp": [0]}))
    assert counts["commit files read"] == 3 + 1  # the three, and a look for a fourth: the head
    assert counts["table loads"] == 0 and counts["listings"] == 0
    assert counts["commit files written"] == 2  # the first attempt found its version taken
    assert result.first_offsets == {1: topic.end_offsets()[1] - 1} and result.version == 305


def test_a_topic_created_again_at_the_same_place_is_loaded_again(tmp_path):
    first = create_topic(tmp_path, "events", partitions=2, key_type=pa.string(), value_type=pa.int64())
    for _ in range(3):
        first.append(ROWS)
    shutil.rmtree(first.uri)
    second = create_topic(tmp_path, "events", partitions=2, key_type=pa.string(), value_type=pa.int64())
    assert second.append(ROWS).version == 1  # not version 4 of a log that no longer exists
    keys_per_partition = Counter(partition_for(k.encode(), 2) for k in ROWS["key"].to_pylist())
    assert second.end_offsets() == {p: keys_per_partition[p] for p in (0, 1)}  # offsets from 0 again


def test_an_append_that_keeps_losing_fails_clearly_and_leaves_no_files(tmp_path, monkeypatch):
    topic = create_topic(tmp_path, "events", partitions=1, key_type=pa.string(), value_type=pa.int64())
    topic.append(ROWS)
    monkeypatch.setattr("deltastreams.sinks.topics.append_at", lambda *a, **k: None)  # every version taken
    with pytest.raises(CommitError, match="another writer committed first 1 times in a row; nothing was appended"):
        topic.append(ROWS, attempts=1)
    assert len(list((tmp_path / "topics" / "events" / "partition=0").iterdir())) == 1
