import os
import time
from datetime import timedelta

import pyarrow as pa

from deltastreams.sinks._internal.files import write_partition_file
from deltastreams.sinks.retention import (
    FILES_AFTER_COMMIT,
    FILES_AFTER_DELETE,
    FILES_DURING_DELETE,
    TOMBSTONE_RETENTION_PROPERTY,
    delete_unreferenced,
    purge_consumed,
)
from deltastreams.sinks.transaction import DecidedBatch, TablePublication
from tests.sinks.retention_support import append_values, files_on_disk, sink, snapshot_paths

ORPHAN = timedelta(minutes=5)
REMOVED = timedelta(minutes=10)
MINUTE = 60_000


def orphan(topic, partition=0, staging=False, age_ms=0):
    rows = pa.table({"offset": pa.array([100], pa.int64()), "timestamp": pa.array([1], pa.int64()), "key": ["o"], "value": pa.array([1], pa.int64())})
    written = write_partition_file(topic.uri, partition, rows, staging=staging)
    if age_ms:
        then = time.time() - age_ms / 1000
        os.utime(f"{topic.uri}/{written.path}", (then, then))
    return written


def topic_with_history(tmp_path):
    topic = sink(tmp_path, "app-x-repartition")
    for b in range(4):
        append_values(topic, [(f"k{b}", b, 0, b), (f"j{b}", b, 1, b)])
    return topic


def test_old_orphans_go_young_ones_and_referenced_files_stay(tmp_path):
    topic = topic_with_history(tmp_path)
    referenced = snapshot_paths(topic.uri)
    old = [orphan(topic, age_ms=6 * MINUTE).path, orphan(topic, staging=True, age_ms=6 * MINUTE).path]
    young = [orphan(topic, age_ms=4 * MINUTE).path, orphan(topic, staging=True).path]
    steps = []
    result = delete_unreferenced(topic.delta_table(), orphan_delay=ORPHAN, removed_delay=REMOVED, on_step=steps.append)
    assert (result.files_deleted, result.orphans_deleted) == (2, 2)
    assert files_on_disk(topic.uri) == referenced | set(young)
    assert steps == [FILES_DURING_DELETE, FILES_AFTER_DELETE]  # the table has the delay's property already: no commit
    assert set(old).isdisjoint(files_on_disk(topic.uri))


def test_files_of_a_decided_batch_stay_until_it_is_published(tmp_path):
    topic = topic_with_history(tmp_path)
    pending = orphan(topic, partition=1, age_ms=60 * MINUTE)
    abandoned = orphan(topic, age_ms=60 * MINUTE)
    decided = DecidedBatch(7, 0, {"in": (3, 4)}, {"x": TablePublication(topic.uri, (pending,))})
    delete_unreferenced(topic.delta_table(), decided=[decided], orphan_delay=ORPHAN, removed_delay=REMOVED)
    on_disk = files_on_disk(topic.uri)
    assert pending.path in on_disk and abandoned.path not in on_disk


def test_removed_files_go_only_once_their_removal_is_older_than_the_delay(tmp_path):
    topic = topic_with_history(tmp_path)
    before = snapshot_paths(topic.uri)
    removed_at = int(time.time() * 1000)
    purge_consumed(topic.delta_table(), {0: 4, 1: 4}, now_ms=removed_at)
    gone = before - snapshot_paths(topic.uri)
    assert len(gone) == 6
    # Removed files were written long ago: as orphans they would go, as removed files they stay.
    for path in gone:
        os.utime(f"{topic.uri}/{path}", (time.time() - 3600, time.time() - 3600))
    result = delete_unreferenced(topic.delta_table(), orphan_delay=ORPHAN, removed_delay=REMOVED, now_ms=removed_at + 9 * MINUTE)
    assert result.files_deleted == 0 and gone <= files_on_disk(topic.uri)
    result = delete_unreferenced(topic.delta_table(), orphan_delay=ORPHAN, removed_delay=REMOVED, now_ms=removed_at + 10 * MINUTE)
    assert (result.files_deleted, result.orphans_deleted) == (6, 0)
    assert files_on_disk(topic.uri) == snapshot_paths(topic.uri)


def test_the_tables_tombstone_retention_follows_the_removed_file_delay(tmp_path):
    topic = topic_with_history(tmp_path)
    table = topic.delta_table()
    # twice the delay: a removal must outlive the moment its file may be deleted. A topic
    # deltastreams creates has it already for the default delay, so no commit is needed.
    assert table.metadata().configuration[TOMBSTONE_RETENTION_PROPERTY] == "interval 1200000 milliseconds"
    assert delete_unreferenced(table, orphan_delay=ORPHAN, removed_delay=REMOVED).version is None
    steps = []
    first = delete_unreferenced(table, orphan_delay=ORPHAN, removed_delay=timedelta(minutes=1), on_step=steps.append)
    assert first.version == 5 == table.version() and steps[0] == FILES_AFTER_COMMIT
    assert table.metadata().configuration[TOMBSTONE_RETENTION_PROPERTY] == "interval 120000 milliseconds"
    assert delete_unreferenced(table, orphan_delay=ORPHAN, removed_delay=timedelta(minutes=1)).version is None  # set once


def test_a_table_that_moved_on_is_left_alone(tmp_path):
    topic = topic_with_history(tmp_path)
    stale = topic.delta_table()
    delete_unreferenced(stale, orphan_delay=ORPHAN, removed_delay=REMOVED)
    old = orphan(topic, age_ms=60 * MINUTE)
    append_values(topic, [("new", 1, 0, 9)])  # a file the stale view does not know
    result = delete_unreferenced(stale, orphan_delay=timedelta(0), removed_delay=REMOVED)
    assert result.conflict and result.files_deleted == 0
    assert old.path in files_on_disk(topic.uri) and snapshot_paths(topic.uri) <= files_on_disk(topic.uri)
