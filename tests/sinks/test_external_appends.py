"""Records other Delta writers append without offsets (write_deltalake here; delta-spark in
tests/interop) get dense offsets from the log, the same for every reader and for our writers."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from deltastreams.conf.errors import ExternalAppendError, LogRetentionError
from deltastreams.sinks import Topic, create_topic, files_added, partition_for
from deltastreams.sinks._internal import offsets
from deltastreams.sinks._internal.delta_log import read_version

KEYS = pa.string()


def external(partitions: list[int], keys: list[str], values: list[int], *, offsets=None) -> pa.Table:
    """Rows as a pandas or polars user appends them: the partition, no offsets."""
    n = len(keys)
    return pa.table(
        {
            "partition": pa.array(partitions, pa.int32()),
            "offset": pa.array(offsets if offsets is not None else [None] * n, pa.int64()),
            "timestamp": pa.array(range(100, 100 + n), pa.int64()),
            "key": keys,
            "value": pa.array(values, pa.int64()),
        }
    )


def ours(keys: list[str], values: list[int]) -> pa.Table:
    return pa.table({"key": keys, "value": pa.array(values, pa.int64()), "timestamp": pa.array(range(len(keys)), pa.int64())})


@pytest.fixture
def topic(tmp_path) -> Topic:
    return create_topic(str(tmp_path), "events", partitions=2, key_type=KEYS, value_type=pa.int64())


def test_records_appended_without_offsets_follow_the_partition_in_log_order(topic, tmp_path):
    topic.append(ours(["a", "b", "c"], [1, 2, 3]))  # partition 0 ends at 3 (all three keys hash there)
    write_deltalake(topic.uri, external([0, 0, 1], ["x", "y", "z"], [4, 5, 6]), mode="append")
    write_deltalake(topic.uri, external([1, 0], ["u", "v"], [7, 8]), mode="append")
    topic.append(ours(["a"], [9]))  # our writer continues after them
    read = Topic.open(str(tmp_path), "events").read()
    rows = list(zip(read["partition"].to_pylist(), read["offset"].to_pylist(), read["value"].to_pylist(), strict=True))
    assert rows == [(0, 0, 1), (0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5), (0, 5, 8), (0, 6, 9), (1, 0, 6), (1, 1, 7)]
    assert topic.end_offsets() == {0: 7, 1: 2}
    # Readers following the log version by version assign the same offsets.
    incremental = [(f.partition, f.min_offset, f.max_offset) for v in range(1, topic.version() + 1) for f in files_added(topic.uri, v - 1, v)]
    assert sorted(incremental) == sorted((f.partition, f.min_offset, f.max_offset) for f in topic.files())
    assert topic.read(after_version=2)["offset"].to_pylist() == [5, 6, 1]


def test_a_null_partition_is_refused_naming_the_file(topic):
    write_deltalake(topic.uri, external([None], ["x"], [1]), mode="append")
    with pytest.raises(ExternalAppendError, match=r"null partition; a writer other than deltastreams must set 'partition'"):
        topic.read()


def test_some_offsets_null_and_some_not_is_refused(topic):
    write_deltalake(topic.uri, external([0, 0], ["x", "y"], [1, 2], offsets=[0, None]), mode="append")
    with pytest.raises(ExternalAppendError, match=r"has 1 rows without an offset among rows with one"):
        topic.read()


def test_offsets_already_taken_in_the_partition_are_refused(topic):
    write_deltalake(topic.uri, external([0, 0], ["x", "y"], [1, 2]), mode="append")  # offsets 0 and 1
    write_deltalake(topic.uri, external([0], ["z"], [3], offsets=[1]), mode="append")  # a writer counting on its own
    with pytest.raises(ExternalAppendError, match=r"holds offsets 1..1 of partition 0, whose records end at 2: those offsets are taken"):
        topic.read()


def test_offsets_after_the_partitions_end_leave_a_gap_as_kafka_offsets_may(topic):
    """Not dense, but nothing taken twice: accepted, and what follows continues after the gap."""
    write_deltalake(topic.uri, external([0], ["x"], [1]), mode="append")  # offset 0
    write_deltalake(topic.uri, external([0], ["y"], [2], offsets=[7]), mode="append")
    write_deltalake(topic.uri, external([0], ["z"], [3]), mode="append")  # the log assigns 8
    assert topic.read()["offset"].to_pylist() == [0, 7, 8]
    assert topic.end_offsets() == {0: 9, 1: 0}


def test_an_application_reader_judges_each_file_and_rejected_files_hold_no_offsets(topic, tmp_path):
    """What a job reads version by version: the files breaking the contract come apart, with
    why, and the offsets of everything else are those of a log without them (so a reader that
    dead-letters them, one that skips them and our own writer agree)."""
    topic.append(ours(["a", "b", "c"], [1, 2, 3]))  # version 1: partition 0, offsets 0..2
    write_deltalake(topic.uri, external([None], ["x"], [4]), mode="append")  # 2: null partition
    write_deltalake(topic.uri, external([0], ["y"], [5], offsets=[1]), mode="append")  # 3: offset 1 is taken
    write_deltalake(topic.uri, external([0, 0], ["z", "w"], [6, 7], offsets=[None, 9]), mode="append")  # 4: mixed
    write_deltalake(topic.uri, external([0], ["v"], [8]), mode="append")  # 5: fine, continues at 3
    offsets._LOGS.clear()  # a new process: the ends come from the log alone
    reads = [read_version(topic.uri, v) for v in range(1, 6)]
    assert [[f.path for f in r.rejected] != [] for r in reads] == [False, True, True, True, False]
    assert "null partition" in reads[1].rejected[0].reason and reads[1].rejected[0].partition is None
    assert "offsets 1..1 of partition 0, whose records end at 3: those offsets are taken" in reads[2].rejected[0].reason
    assert "1 rows without an offset among rows with one" in reads[3].rejected[0].reason
    assert [(f.min_offset, f.max_offset) for f in reads[4].files] == [(3, 3)]
    assert topic.end_offsets() == {0: 4, 1: 0}  # our writer agrees: the rejected files hold no offsets
    assert topic.append(ours(["a"], [9])).first_offsets == {0: 4}
    with pytest.raises(ExternalAppendError, match=r"version 2\) has a null partition"):
        files_added(topic.uri, 1, 2)  # a plain reader fails, naming the file


def test_without_the_commits_that_order_them_offsets_cannot_be_assigned(topic, tmp_path):
    topic.append(ours(["a"], [1]))
    topic.delta_table().create_checkpoint()  # version 1: every file has its offsets
    write_deltalake(topic.uri, external([0], ["x"], [2]), mode="append")
    for version in (0, 1):  # log retention deleted the commits the checkpoint covers
        (tmp_path / "topics" / "events" / "_delta_log" / f"{version:020d}.json").unlink()
    assert Topic.open(str(tmp_path), "events").read()["offset"].to_pylist() == [0, 1]  # from the checkpoint on
    topic.delta_table().create_checkpoint()  # version 2 holds the file without offsets
    (tmp_path / "topics" / "events" / "_delta_log" / f"{2:020d}.json").unlink()
    offsets._LOGS.clear()  # a new process
    with pytest.raises(LogRetentionError, match=r"holds records appended without offsets, and the commit files that order them"):
        Topic.open(str(tmp_path), "events").read()


def test_the_documented_pandas_append_runs_as_written(capsys):
    """docs/bad-input.md's pandas example, extracted and run as it is written there: offsets null
    (write_deltalake needs every column), assigned by the log per partition."""
    page = (Path(__file__).parents[2] / "docs" / "bad-input.md").read_text()
    block = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "docs/bad-input.md", "exec"), namespace)  # noqa: S102 - the documentation's own code
    records = namespace["records"]
    assert records.num_rows == 3
    by_partition: dict[int, list[int]] = {}
    for row in records.to_pylist():
        by_partition.setdefault(row["partition"], []).append(row["offset"])
    assert all(offsets == list(range(len(offsets))) for offsets in by_partition.values())
    assert {row["key"]: row["partition"] for row in records.to_pylist()} == {u: partition_for(u.encode(), 2) for u in ("u1", "u2", "u3")}
    assert "'offset': 0" in capsys.readouterr().out


def test_a_reader_behind_log_retention_reads_what_carries_offsets(topic, tmp_path):
    """Where the log before a version is gone (retention) the ends there are unknown: files whose
    writer set their offsets are read as they are; only records without offsets need the history."""
    topic.append(ours(["a"], [1]))  # version 1
    topic.append(ours(["b"], [2]))  # version 2
    topic.delta_table().create_checkpoint()
    topic.append(ours(["c"], [3]))  # version 3
    for version in (0, 1):
        (tmp_path / "topics" / "events" / "_delta_log" / f"{version:020d}.json").unlink()
    offsets._LOGS.clear()  # a new process
    read = read_version(topic.uri, 2)  # version 1 cannot be loaded any more
    assert [(f.min_offset, f.max_offset) for f in read.files] == [(1, 1)] and read.rejected == []
    assert [(f.min_offset, f.max_offset) for f in read_version(topic.uri, 3).files] == [(2, 2)]
