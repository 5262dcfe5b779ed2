import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from deltastreams.conf.errors import RetentionError
from deltastreams.sinks import Topic
from deltastreams.sinks._internal import delta_log
from deltastreams.sinks.retention import PURGE_AFTER_COMMIT, consumed_offsets, purge_consumed
from tests.sinks.retention_support import append_values, files_on_disk, read_all_versions, sink, snapshot_paths


def repartition_topic(tmp_path, batches=5):
    topic = sink(tmp_path, "app-x-repartition")
    for b in range(batches):
        append_values(topic, [(f"k{b}-{i}", b * 10 + i, i % 2, b) for i in range(4)])  # two records per partition and batch
    return topic


def offsets(records, partition):
    return records.filter(pc.equal(records["partition"], partition))["offset"].to_pylist()


def test_purge_removes_consumed_files_keeping_offsets_and_each_partitions_newest_file(tmp_path):
    topic = repartition_topic(tmp_path)
    ends = topic.end_offsets()
    assert ends == {0: 10, 1: 10}
    steps = []
    result = purge_consumed(topic.delta_table(), {0: 5, 1: 10}, on_step=steps.append)
    # Partition 0: files [0,1] [2,3] go, [4,5] straddles offset 5 and stays. Partition 1: all
    # consumed, but its newest file [8,9] stays: it carries the end offset.
    assert (result.files_removed, result.records_before) == (2 + 4, 12)
    assert steps == [PURGE_AFTER_COMMIT]
    left = Topic.open(tmp_path, "app-x-repartition").read()
    assert offsets(left, 0) == [4, 5, 6, 7, 8, 9]
    assert offsets(left, 1) == [8, 9]
    assert topic.end_offsets() == ends  # what a starting application computes its next offsets from
    assert delta_log.end_offsets(DeltaTable(topic.uri)) == ends
    assert result.version == DeltaTable(topic.uri).version()


def test_removed_files_stay_on_disk_and_readers_of_any_range_still_read_them(tmp_path):
    topic = repartition_topic(tmp_path)
    everything = read_all_versions(topic)
    middle = topic.version() - 2
    later = topic.read(after_version=middle)
    purge_consumed(topic.delta_table(), {0: 8, 1: 8})
    append_values(topic, [("new", 99, 0, 9)])
    assert topic.read(after_version=middle, up_to_version=middle + 2) == later  # a slow reader of an old range
    assert read_all_versions(topic).num_rows == everything.num_rows + 1
    assert topic.read(after_version=middle + 3)["key"].to_pylist() == ["new"]  # a reader of the new versions
    assert files_on_disk(topic.uri) >= snapshot_paths(topic.uri)


def test_consumed_offsets_are_where_a_downstream_at_a_version_stands(tmp_path):
    topic = repartition_topic(tmp_path)
    table = topic.delta_table()
    assert consumed_offsets(table, -1) == {}
    assert consumed_offsets(table, 2) == {0: 4, 1: 4}  # versions 1 and 2 added offsets 0-3
    assert consumed_offsets(table, table.version()) == {0: 10, 1: 10}
    purge_consumed(table, consumed_offsets(table, 3))
    assert offsets(topic.read(), 0) == [6, 7, 8, 9]


def test_purging_beyond_a_partitions_end_is_refused(tmp_path):
    topic = repartition_topic(tmp_path)
    version = topic.version()
    with pytest.raises(RetentionError, match=r"below offset 11: its records are \[0, 10\)"):
        purge_consumed(topic.delta_table(), {0: 11})
    assert topic.version() == version


def test_a_purge_racing_the_applications_commit_fails_cleanly(tmp_path):
    topic = repartition_topic(tmp_path)
    stale = topic.delta_table()
    append_values(topic, [("late", 1, 0, 9)])
    files = snapshot_paths(topic.uri)
    result = purge_consumed(stale, {0: 10, 1: 10})
    assert result.conflict and result.version is None and result.files_removed == 0
    assert snapshot_paths(topic.uri) == files
    assert stale.version() == topic.version() - 1  # the caller's table is not moved past its own view


def test_nothing_to_purge_commits_nothing(tmp_path):
    topic = repartition_topic(tmp_path, batches=1)
    result = purge_consumed(topic.delta_table(), {0: 2, 1: 2})
    assert result.version is None and not result.conflict
    assert topic.version() == 1


def test_the_result_describes_the_step_in_one_log_line(tmp_path):
    topic = repartition_topic(tmp_path)
    line = purge_consumed(topic.delta_table(), {0: 10, 1: 10}).describe()
    assert line.startswith(f"purge {topic.uri}, version 6, files -8 +0, records 16 -> 0, bytes ") and line.endswith(" -> 0")
