import pyarrow as pa
import pytest

from deltastreams.sinks import Topic, create_topic, partition_for
from deltastreams.streams.errors import RecordError, SchemaMismatchError, TopicExistsError, TopicNotFoundError

VALUE = pa.struct([("user_id", pa.string()), ("duration_s", pa.int32())])


def records(keys, durations, stamps):
    return pa.table(
        {
            "key": pa.array(keys, pa.string()),
            "value": pa.array([{"user_id": k, "duration_s": d} for k, d in zip(keys, durations)], VALUE),
            "timestamp": pa.array(stamps, pa.int64()),
        }
    )


@pytest.fixture
def topic(tmp_path):
    return create_topic(tmp_path, "views", partitions=3, key_type=pa.string(), value_type=VALUE, key_column="user_id")


def test_append_assigns_dense_offsets_per_partition_and_kafka_partitions(topic, tmp_path):
    keys = [f"user-{i}" for i in range(30)]
    topic.append(records(keys, range(30), range(30)))
    topic.append(records(keys[:10], range(10), range(100, 110)))
    table = Topic.open(tmp_path, "views").read()
    for partition in range(3):
        rows = table.filter(pa.compute.equal(table["partition"], partition))
        assert rows["offset"].to_pylist() == list(range(rows.num_rows))
    expected = {k: partition_for(k.encode(), 3) for k in keys}
    assert all(expected[k] == p for k, p in zip(table["key"].to_pylist(), table["partition"].to_pylist()))
    assert table.num_rows == 40


def test_order_within_a_partition_is_append_order(topic):
    topic.append(records(["u"] * 5, [1, 2, 3, 4, 5], [50, 10, 40, 20, 30]))
    assert [v["duration_s"] for v in topic.read()["value"].to_pylist()] == [1, 2, 3, 4, 5]


def test_read_between_versions_returns_only_what_those_versions_added(topic):
    v1 = topic.append(records(["a", "b"], [1, 2], [1, 2])).version
    v2 = topic.append(records(["c"], [3], [3])).version
    v3 = topic.append(records(["d", "e"], [4, 5], [4, 5])).version
    assert sorted(topic.read(after_version=v1, up_to_version=v2)["key"].to_pylist()) == ["c"]
    assert sorted(topic.read(after_version=v1, up_to_version=v3)["key"].to_pylist()) == ["c", "d", "e"]
    part = partition_for(b"d", 3)
    only = topic.read(part, after_version=v2, up_to_version=v3)
    assert set(only["partition"].to_pylist()) == {part}


def test_plain_delta_readers_see_flat_columns_and_the_key_stored_once(topic):
    topic.append(records(["a"], [7], [1]))
    from deltalake import DeltaTable

    columns = DeltaTable(topic.uri).to_pyarrow_dataset().to_table(use_threads=False).column_names
    assert sorted(columns) == ["duration_s", "offset", "partition", "timestamp", "user_id"]


def test_appending_to_a_missing_topic_fails_clearly(tmp_path):
    with pytest.raises(TopicNotFoundError, match="topic 'nope' does not exist"):
        Topic.open(tmp_path, "nope")


def test_wrong_schema_fails_naming_the_column(topic):
    bad = pa.table({"key": ["a"], "value": pa.array([{"user_id": "a", "secs": 3}]), "timestamp": pa.array([1], pa.int64())})
    with pytest.raises(SchemaMismatchError, match="missing \\['duration_s'\\]") as info:
        topic.append(bad)
    assert info.value.topic == "views"
    wrong_type = pa.table({"key": ["a"], "value": pa.array([{"user_id": "a", "duration_s": "long"}]), "timestamp": pa.array([1], pa.int64())})
    with pytest.raises(SchemaMismatchError, match="value.duration_s"):
        topic.append(wrong_type)


def test_null_key_fails_when_the_partitioner_needs_one(topic):
    with pytest.raises(RecordError, match="null key.*3 partitions"):
        topic.append(records([None], [1], [1]))
    assert topic.read().num_rows == 0


def test_key_shared_with_a_value_field_must_agree(topic):
    bad = pa.table({"key": ["a"], "value": pa.array([{"user_id": "b", "duration_s": 1}], VALUE), "timestamp": pa.array([1], pa.int64())})
    with pytest.raises(SchemaMismatchError, match="has key 'a' and user_id='b'"):
        topic.append(bad)


def test_creating_twice_fails_unless_identical_and_exist_ok(topic, tmp_path):
    with pytest.raises(TopicExistsError):
        create_topic(tmp_path, "views", partitions=3, key_type=pa.string(), value_type=VALUE, key_column="user_id")
    same = create_topic(tmp_path, "views", partitions=3, key_type=pa.string(), value_type=VALUE, key_column="user_id", exist_ok=True)
    assert same.layout == topic.layout
    with pytest.raises(TopicExistsError, match="exists with layout"):
        create_topic(tmp_path, "views", partitions=4, key_type=pa.string(), value_type=VALUE, key_column="user_id", exist_ok=True)


def test_reserved_column_names_are_refused(tmp_path):
    with pytest.raises(SchemaMismatchError, match="offset"):
        create_topic(tmp_path, "x", partitions=1, key_type=pa.string(), value_type=pa.struct([("offset", pa.int64())]))


def test_latest_version_finds_new_commits_by_probing_the_log(topic):
    from deltastreams.sinks import latest_version

    start = topic.version()
    assert latest_version(topic.uri, start) == start  # nothing new: one probe
    for i in range(3):
        topic.append(records([f"u{i}"], [i], [i]))
    assert latest_version(topic.uri, start) == start + 3 == topic.version()
    assert latest_version(topic.uri, start + 2) == start + 3


@pytest.mark.parametrize("key_in_value", [False, True])
def test_a_null_struct_value_a_delete_survives_the_one_column_per_field_layout(tmp_path, key_in_value):
    # A table's deletes are null values; a struct value is stored one column per field, where
    # the struct's own null must not turn into a value of empty fields.
    fields = [("user_id", pa.string())] if key_in_value else []
    value_type = pa.struct(fields + [("region", pa.string()), ("visits", pa.int64())])
    topic = create_topic(str(tmp_path), "users", partitions=1, key_type=pa.string(), value_type=value_type, key_column="user_id")
    values = [{"region": "eu", "visits": 1}, None, {"region": None, "visits": 0}]
    if key_in_value:
        values = [dict(v, user_id=k) if v is not None else None for v, k in zip(values, ["a", "b", "c"], strict=True)]
    topic.append(pa.table({"key": ["a", "b", "c"], "value": pa.array(values, value_type), "timestamp": pa.array([1, 2, 3], pa.int64())}))
    read = Topic.open(str(tmp_path), "users").read()
    assert read.column("key").to_pylist() == ["a", "b", "c"]
    assert read.column("value").to_pylist() == values
