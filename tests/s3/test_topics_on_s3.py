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
