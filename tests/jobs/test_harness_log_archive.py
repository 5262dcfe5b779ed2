from pathlib import Path

import pyarrow as pa

from deltastreams.devtools.harness.log_archive import LogArchiver, history
from deltastreams.sinks import create_topic
from deltastreams.sinks.retention import clean_log


def busy_topic(root, appends):
    topic = create_topic(root, "t", partitions=1, key_type=pa.string(), value_type=pa.int64())
    table = topic.delta_table()
    table.alter.set_table_properties({"delta.checkpointInterval": "5"})
    for i in range(appends):
        topic.append(pa.table({"key": [f"k{i}"], "value": pa.array([i], pa.int64()), "timestamp": pa.array([i], pa.int64())}))
    table.update_incremental()
    return topic, table


def test_the_archive_keeps_every_commit_that_log_retention_deletes(tmp_path):
    topic, table = busy_topic(tmp_path, 12)
    archiver = LogArchiver(str(tmp_path))
    archiver.archive_once()
    assert clean_log(table, keep_versions=1).files_deleted > 0
    topic.append(pa.table({"key": ["late"], "value": pa.array([0], pa.int64()), "timestamp": pa.array([0], pa.int64())}))
    with archiver:  # the background thread, then a last copy on exit
        pass
    commits, missing = history(str(tmp_path), Path(topic.uri))
    assert missing == []
    assert [c.version for c in commits] == list(range(15))
    assert sum(len(c.adds()) for c in commits) == 13


def test_history_names_the_versions_nobody_archived(tmp_path):
    topic, table = busy_topic(tmp_path, 12)
    clean_log(table, keep_versions=1)
    commits, missing = history(str(tmp_path), Path(topic.uri))
    assert missing == list(range(10)) and commits[0].version == 10  # Topic.append checkpoints at 5 and 10: cut at 10
