"""Topics on an ``s3://bucket/prefix`` root, against a real SeaweedFS: created, appended to, read
back, through delta-rs (the log) and pyarrow's S3 filesystem (the data files), both given the
options from one place."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs

from deltastreams.sinks import Topic, create_topic, filesystem_for, partition_for, root_has_topics

VALUE = pa.struct([("user_id", pa.string()), ("duration_s", pa.int32())])


def records(keys, durations, stamps):
    return pa.table(
        {
            "key": pa.array(keys, pa.string()),
            "value": pa.array([{"user_id": k, "duration_s": d} for k, d in zip(keys, durations, strict=True)], VALUE),
            "timestamp": pa.array(stamps, pa.int64()),
        }
    )


def test_a_topic_on_an_s3_root_is_created_appended_and_read_back(s3_server, s3_root):
    assert not root_has_topics(s3_root)  # an object store has no folders: a prefix without objects is no root
    topic = create_topic(s3_root, "views", partitions=3, key_type=pa.string(), value_type=VALUE, key_column="user_id")
    keys = [f"user-{i}" for i in range(30)]
    first = topic.append(records(keys, range(30), range(30)))
    topic.append(records(keys[:10], range(10), range(100, 110)))

    assert root_has_topics(s3_root)
    reopened = Topic.open(s3_root, "views")
    assert reopened.uri == f"{s3_root}/topics/views" and reopened.version() == 2
    table = reopened.read()
    assert table.num_rows == 40
    for partition in range(3):
        rows = table.filter(pa.compute.equal(table["partition"], partition))
        assert rows["offset"].to_pylist() == list(range(rows.num_rows))
    expected = {k: partition_for(k.encode(), 3) for k in keys}
    assert all(expected[k] == p for k, p in zip(table["key"].to_pylist(), table["partition"].to_pylist(), strict=True))
    assert reopened.files(after_version=1)  # the second append's files, read from its commit file
    assert first.version == 1

    # The files really are in the bucket, under the prefix (not on a local disk).
    fs, base = filesystem_for(reopened.uri)
    assert type(fs).__name__ == "S3FileSystem" and base == f"{s3_server.bucket}/{s3_root.split('/', 3)[3]}/topics/views"
    listed = s3_server.filesystem().get_file_info(pafs.FileSelector(base, recursive=True))
    assert any(i.path.endswith(".parquet") for i in listed) and any(i.path.endswith("00000000000000000002.json") for i in listed)


def test_a_writer_checkpoints_merges_and_cleans_its_log_on_s3(s3_server, s3_root, monkeypatch):
    """What Topic.append does every checkpoint interval (docs/retention.md), on an object store:
    modification times, conditional writes and deletes through the store's API."""
    from datetime import timedelta

    from deltastreams.sinks._internal import small_files

    monkeypatch.setattr(small_files, "MIN_FILES", 4)
    monkeypatch.setattr(small_files, "FAN_IN", 3)
    topic = create_topic(s3_root, "events", partitions=1, key_type=pa.string(), value_type=VALUE, log_retention=timedelta(milliseconds=1), checkpoint_interval=5)
    for i in range(24):
        topic.append(records([f"user-{i}"], [i], [i]))
    fs, base = filesystem_for(topic.uri)
    log = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(f"{base}/_delta_log")))
    commits = [int(name[:20]) for name in log if name.endswith(".json") and name[:20].isdigit()]
    oldest = min(commits)  # cut at a checkpoint, every commit from there on kept, without gaps
    assert oldest % 5 == 0 and f"{oldest:020d}.checkpoint.parquet" in log and commits == list(range(oldest, topic.version() + 1))
    assert topic.version() - oldest < 2 * 5  # 24 appends and their merges, but the log holds less than two intervals
    read = Topic.open(s3_root, "events").read()
    assert read["offset"].to_pylist() == list(range(24)) and [v["duration_s"] for v in read["value"].to_pylist()] == list(range(24))
    data = [i for i in fs.get_file_info(pafs.FileSelector(f"{base}/partition=0")) if i.base_name.endswith(".parquet")]
    assert len(data) < 24  # merged, and what the deleted versions replaced is gone
