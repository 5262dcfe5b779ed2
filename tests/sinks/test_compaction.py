import pyarrow as pa
from deltalake import DeltaTable

from sinks import Topic, create_topic
from sinks.compaction import compact_topic
from state import ChangelogEntry, InMemoryKeyValueStore


def changelog(tmp_path):
    topic = create_topic(tmp_path, "app-store-changelog", partitions=2, key_type=pa.binary(), value_type=pa.binary())
    batches = [
        [(b"a", b"1", 0), (b"b", b"1", 0), (b"c", b"1", 1)],
        [(b"a", b"2", 0), (b"c", None, 1)],
        [(b"b", None, 0), (b"a", b"3", 0), (b"d", b"1", 1)],
    ]
    for batch in batches:
        topic.append(
            pa.table(
                {
                    "partition": pa.array([p for _, _, p in batch], pa.int32()),
                    "key": pa.array([k for k, _, _ in batch], pa.binary()),
                    "value": pa.array([v for _, v, _ in batch], pa.binary()),
                    "timestamp": pa.array([0] * len(batch), pa.int64()),
                }
            )
        )
    return topic


def replay(topic, partition, start=0):
    store = InMemoryKeyValueStore("s")
    rows = topic.read(partition)
    store.write(ChangelogEntry(k, v) for k, v, o in zip(rows["key"].to_pylist(), rows["value"].to_pylist(), rows["offset"].to_pylist()) if o >= start)
    return list(store.range())


def test_compaction_keeps_the_last_record_per_key_and_replays_to_the_same_store(tmp_path):
    topic = changelog(tmp_path)
    full = {p: [replay(topic, p, start) for start in range(4)] for p in (0, 1)}
    version = topic.version()
    result = compact_topic(str(tmp_path), "app-store-changelog")
    assert (result.records_before, result.records_after) == (8, 4)  # a, b (a tombstone), c (a tombstone), d
    compacted = Topic.open(tmp_path, "app-store-changelog")
    assert sorted(zip(compacted.read(0)["key"].to_pylist(), compacted.read(0)["offset"].to_pylist())) == [(b"a", 4), (b"b", 3)]
    for p in (0, 1):
        assert [replay(compacted, p, start) for start in range(4)] == full[p]
    # Readers of new versions see no new records: compaction is not data.
    assert compacted.read(after_version=version).num_rows == 0
    assert DeltaTable(compacted.uri).version() == version + 1
