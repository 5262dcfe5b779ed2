"""Batch processors (``process_batches``) through the test driver: the vectorised dedup gives the
record-at-a-time dedup's output, records and stored ids, however the input is cut into batches
and restarted (so punctuations fire where the record-at-a-time processor's do); outputs keep input
order when merged with another branch; a failing ``process_batch`` fails its batch; typed stores
round-trip through RocksDB."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

from deltastreams.conf.errors import ProcessingError, TopologyError
from deltastreams.jobs import dedup
from deltastreams.sinks.serde import array_from_key_bytes, key_bytes
from deltastreams.state import ChangeLoggingStore, RocksDBKeyValueStore
from deltastreams.streams import StreamsBuilder, TopologyTestDriver
from deltastreams.streams.processor import BatchProcessor, Processor, PunctuationType, Stores
from deltastreams.streams._internal.processing.batch_stores import BatchKeyValueStore


def _events(seed: int, n: int = 400) -> list[tuple[str, str, int]]:
    """Ids repeating within and beyond the time-to-live, some records late by more than it, so
    when the purge runs matters."""
    rng = random.Random(seed)
    rows, t = [], 0
    for i in range(n):
        t += rng.randint(0, 700)
        rows.append((f"e{rng.randint(0, 40)}", f"p{i}", max(0, t - rng.choice([0, 0, 0, 3_000, 7_000]))))
    return rows


def _run(vectorised: bool, rows, cuts: list[int], restart: bool):
    driver = TopologyTestDriver(dedup.build_topology(vectorised), {"caching": False}, store_backend="rocksdb")
    for lo, hi in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        driver.pipe_batch("events", rows[lo:hi])
        if restart:
            driver.restart()
    out = [(r.key, r.value, r.timestamp) for r in driver.read_output("unique-events")]
    if vectorised:  # keys: b"s" + UTF-8; values: 8 bytes big-endian (Kafka's LongSerializer)
        entries = driver.store_entries(dedup.TYPED_STORE)
        stored = sorted(zip([k[1:].decode() for k, _ in entries], array_from_key_bytes([v for _, v in entries], pa.int64()).to_pylist(), strict=True))
    else:
        stored = sorted(pickle.loads(value) for _, value in driver.store_entries(dedup.STORE))
    driver.close()
    return out, stored


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_vectorised_dedup_equals_the_record_at_a_time_dedup_however_batched(seed):
    rows = _events(seed)
    one_by_one = list(range(1, len(rows)))
    expected = _run(False, rows, one_by_one, restart=False)
    assert len(expected[0]) < len(rows)  # duplicates were dropped
    rng = random.Random(seed)
    random_cuts = sorted(rng.sample(range(1, len(rows)), 25))
    for cuts, restart in (([], False), (random_cuts, True), (random_cuts, False), (one_by_one[::7], True)):
        assert _run(True, rows, cuts, restart) == expected, (cuts, restart)


def test_a_purge_due_inside_a_batch_runs_before_the_records_after_it():
    # b is kept at 2_000; a at 12_000 moves stream time past the purge at 10_000, which forgets b,
    # so the late b at 6_000 passes (6_000 - 2_000 < TTL). Had the purge waited for the batch's
    # end, b at 6_000 would be dropped.
    rows = [("a", "x", 0), ("b", "z", 2_000), ("a", "w", 12_000), ("b", "v", 6_000), ("b", "t", 9_000)]
    expected = [("a", "x", 0), ("b", "z", 2_000), ("a", "w", 12_000), ("b", "v", 6_000)]
    assert _run(False, rows, list(range(1, len(rows))), restart=False)[0] == expected
    assert _run(True, rows, [], restart=False)[0] == expected


class Punctuating(BatchProcessor):
    def __init__(self, log, calls):
        self.log, self.calls = log, calls

    def init(self, context):
        context.schedule(10, PunctuationType.STREAM_TIME, self.log.append)

    def process_batch(self, batch):
        self.calls.append(batch["timestamp"].to_pylist())


def test_stream_time_punctuation_fires_at_kafkas_times_within_one_batch():
    """TopologyTestDriverTest.shouldPunctuateOnStreamsTime's inputs, piped as one batch."""
    log, calls = [], []
    builder = StreamsBuilder()
    builder.stream("source1").process_batches(lambda: Punctuating(log, calls))
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_batch("source1", [("k", "v", ts) for ts in (42, 42, 51, 52, 61, 65, 71, 72, 95)])
    assert log == [42, 51, 61, 71, 95]
    assert calls == [[42], [42, 51], [52, 61], [65, 71], [72, 95]]  # cut after each record a punctuation follows


class EveryOtherUpper(BatchProcessor):
    """Emits odd rows upper-cased, in reverse order, timestamped +1, with input_row; and one
    summary record from the batch's last row."""

    def process_batch(self, batch):
        rows = np.arange(1, batch.num_rows, 2)[::-1]
        values = [v.upper() for v in batch["value"].take(rows).to_pylist()]
        out = pa.table({"key": batch["key"].take(rows), "value": values, "timestamp": pa.compute.add(batch["timestamp"].take(rows), 1), "input_row": rows})
        return pa.concat_tables([out, pa.table({"key": ["n"], "value": [str(batch.num_rows)]}).append_column("timestamp", pa.array([None], pa.int64())).append_column("input_row", pa.array([batch.num_rows - 1]))])


def test_outputs_merge_with_another_branch_in_input_order():
    builder = StreamsBuilder()
    stream = builder.stream("in")
    processed = stream.process_batches(EveryOtherUpper)
    stream.map_values(lambda v: v + "!").merge(processed).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_batch("in", [("k0", "a", 10), ("k1", "b", 11), ("k2", "c", 12), ("k3", "d", 13)])
    # Within an input record, Kafka's depth-first walk: the source hands it to the batch
    # processor (its first child) before map_values, whatever the merge's argument order.
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [
        ("k0", "a!", 10), ("k1", "B", 12), ("k1", "b!", 11), ("k2", "c!", 12), ("k3", "D", 14), ("n", "4", 13), ("k3", "d!", 13),
    ]


class SummaryOnly(BatchProcessor):
    def process_batch(self, batch):
        return pa.table({"key": ["count"], "value": [batch.num_rows]})


def test_outputs_without_input_row_come_after_the_batchs_last_record_with_its_timestamp():
    builder = StreamsBuilder()
    builder.stream("in").process_batches(SummaryOnly).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_batch("in", [("a", "x", 5), ("b", "y", 9), ("c", "z", 7)])
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [("count", 3, 7)]


class Failing(BatchProcessor):
    def init(self, context):
        self.store = context.get_state_store("s")

    def process_batch(self, batch):
        self.store.put_many(batch["key"], batch["timestamp"])
        raise ValueError("boom")


def test_a_failing_process_batch_fails_its_batch_naming_the_processor_and_commits_nothing():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("s"), key_type=pa.string(), value_type=pa.int64()))
    builder.stream("in").process_batches(Failing, "s", name="failing").to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})  # bad records would go to the DLQ: a batch error does not
    with pytest.raises(ProcessingError, match=r"failing: process_batch raised ValueError: boom \(task 0_0, 2 records\); the batch fails") as raised:
        driver.pipe_batch("in", [("a", "x", 1), ("b", "y", 2)])
    assert raised.value.node == "failing"
    assert driver.read_output("out") == [] and driver.dead_letters() == []
    assert driver.store_entries("s") == []


class RejectingEmpty(BatchProcessor):
    def init(self, context):
        self.context = context

    def process_batch(self, batch):
        empty = np.flatnonzero(np.asarray(batch["value"].to_pylist()) == "")
        self.context.reject(empty, "empty value")
        good = np.setdiff1d(np.arange(batch.num_rows), empty)
        return batch.select(["key", "value"]).take(good).append_column("input_row", pa.array(good))


def test_rejected_records_go_to_the_dead_letter_topic():
    builder = StreamsBuilder()
    builder.stream("in").process_batches(RejectingEmpty).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_batch("in", [("a", "x", 1), ("b", "", 2), ("c", "z", 3)])
    assert [r.key for r in driver.read_output("out")] == ["a", "c"]
    [dead] = driver.dead_letters()
    assert (dead.key, dead.value["reason"], dead.value["source_offset"]) == ('"b"', "empty value", 1)


def test_batch_processors_take_typed_stores_and_record_processors_untyped_ones():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("untyped")))
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("typed"), key_type=pa.string(), value_type=pa.int64()))
    stream = builder.stream("in")
    with pytest.raises(TopologyError, match="store 'untyped' has no types"):
        stream.process_batches(SummaryOnly, "untyped")
    with pytest.raises(TopologyError, match="store 'typed' is typed"):
        stream.process(Processor, "typed")
    with pytest.raises(TopologyError, match="give both key_type and value_type"):
        Stores.key_value_store_builder(Stores.persistent_key_value_store("half"), key_type=pa.string())


def test_typed_stores_round_trip_arrays_through_rocksdb(tmp_path):
    logged = ChangeLoggingStore(RocksDBKeyValueStore("s", tmp_path / "s"))
    store = BatchKeyValueStore(logged, pa.int64(), pa.float64(), "node")
    store.put_many([3, 1, 2, 7], [0.5, None, 2.5, 7.5])  # a null value deletes
    assert store.get_many([1, 2, 3, 9]).to_pylist() == [None, 2.5, 0.5, None]  # pending writes read back
    committed = logged.changelog()
    logged.abort()
    logged.restore(committed)  # the commit, as in production
    assert store.get_many(pa.array([7, 1, 3])).to_pylist() == [7.5, None, 0.5]
    store.delete_many([7])
    assert store.all().to_pylist() == [{"key": 2, "value": 2.5}, {"key": 3, "value": 0.5}]
    assert store.range(2, 2).to_pylist() == [{"key": 2, "value": 2.5}]
    assert store.approximate_num_entries() == 2
    with pytest.raises(ProcessingError, match="store 's' holds values of type double"):
        store.put_many([1], ["not a number"])
    logged.close()


@pytest.mark.parametrize(
    "array",
    [pa.array([1, None, -3], pa.int64()), pa.array([2, -1], pa.int32()), pa.array([1.5, None], pa.float64()), pa.array(["a", None, "bé"]), pa.array([True, None, False]), pa.array([{"x": 1}, None])],
)
def test_kafka_serialized_arrays_decode_back_in_one_call(array):
    assert array_from_key_bytes(key_bytes(array), array.type).equals(array)
    sliced = pa.array(key_bytes(array), pa.large_binary()).slice(1)  # a slice's data starts mid-buffer
    assert array_from_key_bytes(sliced, array.type).equals(array.slice(1))
