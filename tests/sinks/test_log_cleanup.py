from pathlib import Path

import pytest
from deltalake import DeltaTable

from deltastreams.conf.errors import CommitError, LogRetentionError
from deltastreams.sinks import Topic
from deltastreams.sinks._internal.delta_log import commit_path, files_added
from deltastreams.sinks.retention import LOG_AFTER_CHECKPOINT, LOG_AFTER_DELETE, LOG_DURING_DELETE, clean_log, clean_transaction_log
from deltastreams.sinks.transaction import DecidedBatch, TablePublication, TransactionLog
from tests.sinks.retention_support import append_values, sink


def checkpoint_every(table: DeltaTable, versions: int) -> None:
    table.alter.set_table_properties({"delta.checkpointInterval": str(versions)})
    table.update_incremental()


def log_versions(uri) -> list[int]:
    return sorted(int(p.name[:20]) for p in Path(uri, "_delta_log").glob("*.json"))


def checkpoints(uri) -> list[int]:
    return sorted(int(p.name[:20]) for p in Path(uri, "_delta_log").glob("*.checkpoint.parquet"))


def busy_topic(tmp_path, appends=22):
    topic = sink(tmp_path)
    checkpoint_every(topic.delta_table(), 5)  # version 1
    for i in range(appends):
        append_values(topic, [(f"k{i}", i, i % 2, i)])
    return topic


def test_old_commit_files_go_and_the_table_keeps_its_state(tmp_path):
    topic = busy_topic(tmp_path)
    head = topic.version()
    assert head == 23 and checkpoints(topic.uri) == [5, 10, 15, 20]  # Topic.append: at every 5th version
    records, ends = topic.read(), topic.end_offsets()
    steps = []
    result = clean_log(topic.delta_table(), keep_versions=6, on_step=steps.append)
    # Versions 18-23 must stay: cut at the newest checkpoint at or below 18, i.e. 15.
    assert log_versions(topic.uri) == list(range(15, 24)) and checkpoints(topic.uri) == [15, 20]
    assert result.files_deleted == 15 + 2
    assert steps == [LOG_DURING_DELETE, LOG_AFTER_DELETE]
    reopened = Topic.open(tmp_path, "out")
    assert reopened.read() == records and reopened.end_offsets() == ends
    assert len(files_added(topic.uri, 14, head)) == 9  # readable from the cut on
    with pytest.raises(LogRetentionError, match="version 14 of .* is gone") as info:
        files_added(topic.uri, 13, head)
    assert info.value.version == 14


def test_versions_a_reader_still_needs_stay_whatever_keep_versions_says(tmp_path):
    topic = busy_topic(tmp_path)
    table = topic.delta_table()
    assert clean_log(table, keep_versions=1, oldest_needed_version=3).files_deleted == 0  # no checkpoint at or below 3
    clean_log(table, keep_versions=1, oldest_needed_version=12)
    assert log_versions(topic.uri)[0] == 10
    assert len(files_added(topic.uri, 11, topic.version())) == 12  # the downstream reads on from version 12


def test_a_checkpoint_is_written_when_the_newest_is_too_far_behind(tmp_path):
    topic = sink(tmp_path)
    for i in range(10):
        append_values(topic, [(f"k{i}", i, 0, i)])
    table = topic.delta_table()
    steps = []
    assert clean_log(table, keep_versions=3, on_step=steps.append).files_deleted == 0
    assert steps == [LOG_AFTER_CHECKPOINT] and checkpoints(topic.uri) == [10]
    for i in range(5):
        append_values(topic, [(f"k{i}", i, 0, i)])
    table.update_incremental()
    clean_log(table, keep_versions=3)
    assert log_versions(topic.uri) == list(range(10, 16)) and checkpoints(topic.uri) == [10]
    assert Topic.open(tmp_path, "out").end_offsets() == {0: 15, 1: 0}


def decided_batches(tmp_path, batches=12):
    topic = sink(tmp_path)
    checkpoint_every(topic.delta_table(), 5)
    txlog = TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0")
    checkpoint_every(txlog.table, 5)
    txlog.register("first")
    last = None
    for seq in range(batches):
        files = topic.prepare_files(records_for(seq), topic.end_offsets())
        last = DecidedBatch(seq, txlog.epoch, {"in": (seq, seq + 1)}, {topic.name: TablePublication(topic.uri, tuple(files))})
        txlog.decide(last)
        txlog.publish(last, lambda name, uri: DeltaTable(uri))
    return topic, txlog, last


def records_for(seq):
    import pyarrow as pa

    return pa.table({"key": [f"k{seq}"], "value": pa.array([seq], pa.int64()), "timestamp": pa.array([seq], pa.int64())})


def test_transaction_logs_keep_their_last_decided_batch_and_every_txn_version(tmp_path):
    topic, txlog, last = decided_batches(tmp_path)
    for instance in ("second", "third", "fourth", "fifth", "sixth", "seventh"):  # restarts, nothing decided
        TransactionLog(txlog.uri, txlog.txn_app_id).register(instance)
    txlog.table.update_incremental()
    needed = txlog.last_decided_version()
    result = clean_transaction_log(txlog, keep_versions=1)
    assert result.files_deleted > 0
    assert log_versions(txlog.uri)[0] <= needed < txlog.table.version()
    restarted = TransactionLog(txlog.uri, txlog.txn_app_id)
    assert restarted.last_decided() == last
    assert restarted.current_epoch() == 6
    output = topic.delta_table()
    clean_log(output, keep_versions=1)
    assert log_versions(topic.uri)[0] > 0
    assert DeltaTable(topic.uri).transaction_version("app/subtopology-0") == last.seq  # kept in the checkpoint
    version = topic.version()
    restarted.register("eighth")
    restarted.publish(restarted.last_decided(), lambda name, uri: DeltaTable(uri))  # the roll-forward finds it done
    assert topic.version() == version
    assert topic.read()["key"].to_pylist().count("k11") == 1


def test_a_log_that_never_decided_anything_can_be_cleaned(tmp_path):
    txlog = TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0")
    checkpoint_every(txlog.table, 5)
    for i in range(12):
        TransactionLog(txlog.uri, txlog.txn_app_id).register(f"i{i}")
    clean_transaction_log(txlog, keep_versions=1)
    assert log_versions(txlog.uri)[0] > 0
    fresh = TransactionLog(txlog.uri, txlog.txn_app_id)
    assert fresh.last_decided() is None and fresh.current_epoch() == 11


def test_last_decided_refuses_to_guess_when_something_else_deleted_its_entry(tmp_path):
    topic, txlog, last = decided_batches(tmp_path)
    txlog.table.create_checkpoint()
    Path(commit_path(txlog.uri, txlog.last_decided_version())).unlink()
    with pytest.raises(CommitError, match="no longer holds its last decided batch"):
        TransactionLog(txlog.uri, txlog.txn_app_id).last_decided()
