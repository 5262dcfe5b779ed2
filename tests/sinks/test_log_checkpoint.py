"""A topic's checkpoint written from the previous checkpoint and the commits since (issue 42): the
same state delta-rs' own checkpoint holds, written without listing the log, and read by
delta-rs and delta-spark."""

from __future__ import annotations

import json
import os
import shutil
import time

import pyarrow as pa
import pyarrow.parquet as pq
from deltastreams.sinks import DataFile, append_at, open_table
from deltastreams.sinks._internal import log_checkpoint, log_commit, small_files
from deltastreams.sinks._internal.log_expiry import checkpoint_path
from tests.sinks.test_append_cost import cost_of_appends, long_log

WEEK_MS = 7 * 24 * 3600 * 1000


def rows(path: str) -> list[str]:
    """A checkpoint's rows, each as its non-null action in JSON, in a fixed order."""
    return sorted(json.dumps({k: v for k, v in row.items() if v is not None}, sort_keys=True, default=str) for row in pq.read_table(path).to_pylist())


def paths(table) -> list[str]:
    return pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()


def set_pointer(uri: str, version: int) -> None:
    with open(f"{uri}/_delta_log/_last_checkpoint", "w") as pointer:
        pointer.write(json.dumps({"version": version}))


def test_a_checkpoint_built_on_the_previous_one_holds_what_delta_rs_writes(tmp_path):
    topic = long_log(tmp_path, "events", 100)  # delta-rs' checkpoint at 100
    uri = topic.uri
    now_ms = int(time.time() * 1000)
    added = lambda v, p: DataFile(f"partition={p}/part-{v:020d}-{p}.parquet", p, 10, 1000 + v * 10, 1000 + v * 10 + 9, size=1000)  # noqa: E731
    assert append_at(uri, 100, [added(101, 0), added(101, 1)], txn_id=("app-a", 7)) == 101
    assert append_at(uri, 101, [added(102, 1)], txn_id=("app-a", 8)) == 102
    assert append_at(uri, 102, [added(103, 0)], txn_id=("app-b", 1)) == 103
    old = [DataFile(f"partition={p}/part-{v:020d}-{p}.parquet", p, 10, (v - 1) * 10, v * 10 - 1, size=1000) for v, p in ((5, 0), (6, 1), (7, 0))]
    merged = DataFile("partition=0/part-merged.parquet", 0, 10, 40, 59, size=2000)
    fresh = [log_commit.remove(f, data_change=False, now_ms=now_ms) for f in old[:2]] + [log_commit.add(merged, data_change=False)]
    expired = [log_commit.remove(old[2], data_change=True, now_ms=now_ms - 2 * WEEK_MS)]  # older than the default week: forgotten
    removed_again = [log_commit.remove(added(101, 1), data_change=True, now_ms=now_ms)]  # added since the checkpoint, removed since
    for version, actions in ((104, fresh), (105, expired), (106, removed_again)):
        assert log_commit.commit_at(uri, version - 1, actions, operation="WRITE", parameters={}, metrics={}, info={}) == version

    copy = tmp_path / "copy"
    shutil.copytree(uri, copy)
    written = log_checkpoint.write_checkpoint(uri, 106, now_ms=now_ms)
    open_table(str(copy), 106).create_checkpoint()

    assert rows(checkpoint_path(uri, 106)) == rows(checkpoint_path(str(copy), 106))
    pointer = json.loads(open(f"{uri}/_delta_log/_last_checkpoint").read())
    live_files = 2 * 100 + 4 - 2 + 1 - 1 - 1  # appended; merged 2 into 1; removed 2
    assert pointer == {"version": 106, "size": pq.read_metadata(checkpoint_path(uri, 106)).num_rows, "sizeInBytes": os.path.getsize(checkpoint_path(uri, 106)), "numOfAddFiles": live_files}
    live = {f.path for f in written.files}
    assert len(live) == live_files and live == set(paths(open_table(str(copy), 106)))
    assert "partition=0/part-merged.parquet" in live and added(101, 1).path not in live and old[0].path not in live
    assert written.schema == pa.schema(open_table(uri).schema())
    # delta-rs loads the table from it (the pointer names it): the same state
    table = open_table(uri)
    assert table.version() == 106 and set(paths(table)) == live
    assert table.transaction_version("app-a") == 8 and table.transaction_version("app-b") == 1

    # The next checkpoints, built on this one: its tombstones go on until they are older than the
    # table's delta.deletedFileRetentionDuration (20 minutes for a topic created here).
    tombstones = lambda v: {r["path"] for r in pq.read_table(checkpoint_path(uri, v)).column("remove").drop_null().to_pylist()}  # noqa: E731
    assert tombstones(106) == {old[0].path, old[1].path, added(101, 1).path}
    assert append_at(uri, 106, [added(107, 0)]) == 107
    assert log_checkpoint.write_checkpoint(uri, 107, now_ms=now_ms + 1000) is not None and tombstones(107) == tombstones(106)
    assert append_at(uri, 107, [added(108, 1)]) == 108
    later = log_checkpoint.write_checkpoint(uri, 108, now_ms=now_ms + 3600 * 1000)
    assert tombstones(108) == set() and {f.path for f in later.files} == live | {added(107, 0).path, added(108, 1).path}


def test_a_table_it_does_not_cover_is_left_to_delta_rs(tmp_path):
    topic = long_log(tmp_path, "events", 3)
    assert log_checkpoint.write_checkpoint(topic.uri, 3) is None  # no checkpoint to build on
    assert not (tmp_path / "topics" / "events" / "_delta_log" / "_last_checkpoint").exists()
    topic = long_log(tmp_path, "multi", 100)
    assert append_at(topic.uri, 100, [DataFile("partition=0/part-x.parquet", 0, 10, 5000, 5009, size=1000)]) == 101
    (tmp_path / "topics" / "multi" / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 100, "parts": 2}))
    assert log_checkpoint.write_checkpoint(topic.uri, 101) is None  # a multi-part checkpoint
    set_pointer(topic.uri, 100)
    os.unlink(f"{topic.uri}/_delta_log/{100:020d}.json")
    assert log_checkpoint.write_checkpoint(topic.uri, 101) is not None  # commit 100 is not needed: the checkpoint holds it
    os.unlink(f"{topic.uri}/_delta_log/{101:020d}.json")
    assert log_checkpoint.write_checkpoint(topic.uri, 102) is None  # a commit since is missing


def test_the_checkpointing_append_lists_nothing_and_loads_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(small_files, "MIN_FILES", 10**9)  # the long log's data files are not there to merge
    topic = long_log(tmp_path, "events", 2000)
    counts = cost_of_appends(topic, monkeypatch, appends=100)  # versions 2002-2101: 2100 checkpoints
    assert counts["table loads"] == 0 and counts["listings"] == 0
    assert pq.read_metadata(checkpoint_path(topic.uri, 2100)).created_by.startswith("parquet-cpp-arrow")  # ours, not delta-rs' (parquet-rs)
    # the state it holds is the one delta-rs replays from the previous checkpoint (a copy without it)
    copy = tmp_path / "copy"
    shutil.copytree(topic.uri, copy)
    os.unlink(checkpoint_path(str(copy), 2100))
    set_pointer(str(copy), 2000)
    replayed, loaded = open_table(str(copy), 2100), open_table(topic.uri, 2100)
    assert sorted(paths(replayed)) == sorted(paths(loaded))
    assert len(paths(loaded)) > 2 * 2000
