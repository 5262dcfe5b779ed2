import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from deltastreams.sinks import KnownVersion, create_topic
from deltastreams.sinks.transaction import DecidedBatch, TablePublication, TransactionLog, decided_batches
from deltastreams.streams.errors import ProducerFencedError


def staged_batch(topic, seq, records):
    files = topic.prepare_files(records, topic.end_offsets())
    return DecidedBatch(seq=seq, epoch=0, sources={"in": (seq - 1, seq)}, tables={topic.name: TablePublication(topic.uri, tuple(files))})


def records(keys):
    return pa.table({"key": pa.array(keys), "value": pa.array([1] * len(keys), pa.int64()), "timestamp": pa.array([0] * len(keys), pa.int64())})


@pytest.fixture
def setup(tmp_path):
    topic = create_topic(tmp_path, "out", partitions=2, key_type=pa.string(), value_type=pa.int64())
    log = TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0")
    log.register("first")
    return topic, log


def test_publishing_a_decided_batch_twice_adds_its_files_once_even_batch_zero(setup):
    topic, log = setup
    batch = staged_batch(topic, 0, records(["a", "b", "c"]))
    log.decide(batch)
    log.publish(batch, lambda name, uri: DeltaTable(uri))
    version = DeltaTable(topic.uri).version()
    log.publish(batch, lambda name, uri: DeltaTable(uri))  # a recovering instance rolls it forward again
    assert DeltaTable(topic.uri).version() == version
    assert topic.read().num_rows == 3
    assert log.last_decided() == batch


def test_a_newer_instance_fences_the_older_one(setup, tmp_path):
    topic, first = setup
    second = TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0")
    assert second.register("second") == first.epoch + 1
    with pytest.raises(ProducerFencedError, match="was fenced") as info:
        first.decide(staged_batch(topic, 0, records(["a"])))
    assert (info.value.epoch, info.value.current_epoch) == (0, 1)
    assert second.last_decided() is None  # the zombie's batch was never decided
    second.decide(staged_batch(topic, 0, records(["b"])))
    assert second.last_decided().seq == 0


def test_decided_batches_lists_every_decided_batch_oldest_first_but_no_registrations(setup, tmp_path):
    topic, log = setup
    first = staged_batch(topic, 0, records(["a"]))
    log.decide(first)
    successor = TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0")
    successor.register("second")  # a registration is no batch
    second = staged_batch(topic, 1, records(["b"]))
    successor.decide(second)
    assert decided_batches(str(tmp_path / "txlog")) == [first, second]


def test_a_zombie_that_read_the_log_since_the_new_registration_is_still_fenced(setup, tmp_path):
    topic, first = setup
    TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0").register("second")
    first.last_decided_version()  # reading (as log retention does) loads the newer registration
    assert first.table.version() == 2
    with pytest.raises(ProducerFencedError, match="was fenced"):
        first.decide(staged_batch(topic, 0, records(["a"])))


def test_publishing_after_a_known_version_is_one_commit_with_checkpoints_at_the_tables_interval(setup):
    topic, log = setup
    table = DeltaTable(topic.uri)
    table.alter.set_table_properties({"delta.checkpointInterval": "3"})
    known = DeltaTable(topic.uri).version()
    for seq in range(5):
        batch = staged_batch(topic, seq, records([f"k{seq}"]))
        log.decide(batch)
        published = {}
        log.publish(batch, lambda name, uri: DeltaTable(uri), lambda name, version: published.update({name: version}), known_versions={topic.name: KnownVersion(known, 3)})
        assert published == {topic.name: known + 1}
        known += 1
    reloaded = DeltaTable(topic.uri)
    assert (reloaded.version(), reloaded.transaction_version("app/subtopology-0")) == (known, 4)
    assert sorted(topic.read()["key"].to_pylist()) == [f"k{i}" for i in range(5)]
    checkpoints = sorted(int(p.name[:20]) for p in (tmp_path_of(topic) / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints == [v for v in range(1, known + 1) if v % 3 == 0]


def test_publishing_after_a_known_version_that_someone_else_took_is_refused(setup):
    topic, log = setup
    known = DeltaTable(topic.uri).version()
    topic.append(records(["foreign"]))  # another writer commits first
    batch = staged_batch(topic, 0, records(["a"]))
    log.decide(batch)
    with pytest.raises(CommitFailedError):
        log.publish(batch, lambda name, uri: stale_at(uri, known), known_versions={topic.name: KnownVersion(known, 100)})
    assert topic.read()["key"].to_pylist() == ["foreign"]


def stale_at(uri, version):
    table = DeltaTable(uri)
    table.load_as_version(version)
    return table


def tmp_path_of(topic):
    from pathlib import Path

    return Path(topic.uri)


def test_properties_kept_with_the_next_decision_appear_with_it_and_survive_log_cleanup(setup, tmp_path):
    """A property set for the next decision (the committed topology) is invisible until a batch is
    decided, then visible in the same commit; later batches keep it without writing it again, and
    it is table state, so log retention (a checkpoint, then old commits deleted) keeps it."""
    from deltastreams.sinks.retention import clean_transaction_log
    from deltastreams.sinks.transaction import log_property

    topic, log = setup
    uri = str(tmp_path / "txlog")
    log.keep_with_next_decision({"deltastreams.topology": '{"v": 1}'})
    assert log_property(uri, "deltastreams.topology") is None  # nothing decided yet: nothing recorded
    version = log.table.version()
    log.decide(staged_batch(topic, 0, records(["a"])))
    assert log.table.version() == version + 1  # one commit: the batch and its property
    assert log_property(uri, "deltastreams.topology") == '{"v": 1}'
    for seq in range(1, 4):
        log.decide(staged_batch(topic, seq, records(["b"])))
    assert DeltaTable(uri).history(1)[0]["operation"] == "WRITE"
    clean_transaction_log(log, keep_versions=1)
    assert not (tmp_path / "txlog" / "_delta_log" / f"{version + 1:020d}.json").exists()
    assert log_property(uri, "deltastreams.topology") == '{"v": 1}'
    restarted = TransactionLog(uri, "app/subtopology-0")
    restarted.register("second")
    assert restarted.property("deltastreams.topology") == '{"v": 1}' and restarted.last_decided().seq == 3


def test_a_fenced_instance_records_no_property(setup, tmp_path):
    topic, first = setup
    TransactionLog(str(tmp_path / "txlog"), "app/subtopology-0").register("second")
    first.keep_with_next_decision({"deltastreams.topology": "zombie's"})
    with pytest.raises(ProducerFencedError):
        first.decide(staged_batch(topic, 0, records(["a"])))
    from deltastreams.sinks.transaction import log_property

    assert log_property(str(tmp_path / "txlog"), "deltastreams.topology") is None
