"""The Kafka readers in C against the reader through confluent-kafka's Message objects, on a real
broker: the same records, every column, for every format and range, with transactions committed
and aborted, null and empty keys, values and headers, and bytes that do not decode. Two readers in
C: the wire reader (``auto``: sinks/_internal/kafka_wire.py fetches, kafka_range.c decodes the
batches) and the one polling librdkafka (``librdkafka``: kafka_range.c, where the wire reader
cannot read a range)."""

from __future__ import annotations

import json
import random
import struct
import time

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from deltastreams.sinks import kafka
from deltastreams.sinks._internal import json_columns, kafka_arrow
from deltastreams.sinks.kafka import KafkaTopic, OffsetOutOfRangeError, read_range, watermarks
from tests.kafka.waiting import eventually

VALUE_TYPE = pa.struct([("user", pa.string()), ("n", pa.int64())])


def _key(rng: random.Random, i: int) -> bytes | None:
    return rng.choice([None, b"", b"\xff\xfe", f"k{i % 7}".encode(), struct.pack(">q", i)])


def _value(rng: random.Random, i: int) -> bytes | None:
    return rng.choice([None, b"", b"not json", b'{"user": "u1",\n "n": 2}', json.dumps({"user": f"u{i % 5}", "n": i}).encode(), struct.pack(">q", -i)])


def _headers(rng: random.Random, i: int):
    return rng.choice([None, [], [("h", bytes([i % 256]))], [("a", b"1"), ("a", None), ("\u00e9t\u00e9", b"")]])


def produce_mixed(broker, topic: str, count: int, seed: int) -> None:
    """``count`` records over 2 partitions, plain and in transactions (one in four aborted)."""
    rng = random.Random(seed)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    txn = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"{topic}-txn"})
    txn.init_transactions(30)
    i = 0
    while i < count:
        n = rng.randint(1, 40)
        mode = rng.choice(["plain", "commit", "commit", "abort"])
        producer = plain if mode == "plain" else txn
        if mode != "plain":
            txn.begin_transaction()
        for _ in range(n):
            producer.produce(topic, key=_key(rng, i), value=_value(rng, i), partition=rng.randint(0, 1), timestamp=1_000 + i, headers=_headers(rng, i))
            i += 1
        if mode == "commit":
            txn.commit_transaction(30)
        elif mode == "abort":
            # Delivered first: an abort purges records still in flight, and the 4.3 broker then
            # at times refused the end of the transaction (INVALID_TXN_STATE) under -n 2.
            assert txn.flush(30) == 0
            txn.abort_transaction(30)
        else:
            assert plain.flush(10) == 0


FORMATS = [("bytes", "bytes", None), ("string", "string", None), ("string", "json", VALUE_TYPE), ("long", "long", None), ("bytes", "json", None)]


OPEN = kafka_arrow.reader().open_consumer if kafka_arrow.reader() else None


def test_the_c_reader_is_built():
    assert kafka_arrow.reader() is not None, "bin/setup builds the C reader (setup.py's extension); is gcc installed?"


C_READERS = ["auto", "librdkafka"]


@pytest.mark.parametrize("reader", C_READERS)
@pytest.mark.parametrize("key_format,value_format,value_type", FORMATS)
def test_the_c_reader_gives_the_python_readers_records(broker, topic_name, key_format, value_format, value_type, reader):
    broker.create_topic(topic_name, 2)
    produce_mixed(broker, topic_name, 600, seed=len(topic_name) + len(value_format))
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, key_format=key_format, value_format=value_format, value_type=value_type)
    ends = watermarks(topic, [0, 1])
    rng = random.Random(7)
    for partition in (0, 1):
        low, high = ends[partition]
        ranges = [(low, high), (low, low + 1), (high, high)] + [tuple(sorted(rng.sample(range(low, high + 1), 2))) for _ in range(6)]
        for start, end in ranges:
            in_c = read_range(topic, partition, start, end, 30, reader=reader)
            in_python = read_range(topic, partition, start, end, 30, reader="python")
            assert in_c.schema == in_python.schema
            assert in_c.equals(in_python), (partition, start, end, in_c.slice(0, 5).to_pylist(), in_python.slice(0, 5).to_pylist())
    whole = read_range(topic, 0, *ends[0], reader=reader)
    assert whole.num_rows > 0 and whole["offset"].to_pylist() == sorted(whole["offset"].to_pylist())
    assert whole["headers"].null_count < whole.num_rows and whole["key"].null_count > 0


def test_consecutive_ranges_read_on_one_kept_consumer_give_the_python_readers_records(broker, topic_name, monkeypatch):
    # A task's next range starts where its last ended: the kept consumer goes on from there (its
    # fetched records, a record it polled past the last end), and reads that jump assign afresh.
    broker.create_topic(topic_name, 2)
    produce_mixed(broker, topic_name, 600, seed=3)
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="json", value_type=VALUE_TYPE)
    native = kafka_arrow.reader()
    opened = []
    monkeypatch.setattr(native, "open_consumer", lambda *a: opened.append(a[1:]) or OPEN(*a))
    kafka_arrow._consumers.close_all()
    ends = watermarks(topic, [0, 1])
    rng = random.Random(11)
    for partition in (0, 1):
        low, high = ends[partition]
        cuts = [low, *sorted(rng.sample(range(low + 1, high), 12)), high]
        pieces = [read_range(topic, partition, a, b, 30, reader="librdkafka") for a, b in zip(cuts, cuts[1:])]
        assert pa.concat_tables(pieces).equals(read_range(topic, partition, low, high, 30, reader="python"))
        again = read_range(topic, partition, cuts[3], cuts[5], 30, reader="librdkafka")  # back to earlier offsets
        assert again.equals(pa.concat_tables(pieces[3:5]))
    assert opened == [(topic_name, 0), (topic_name, 1)]  # one consumer per partition, kept
    # Records that arrive while the consumer is kept are read by the next range.
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic_name, value=b'{"user": "late", "n": 1}', partition=0)
    assert producer.flush(10) == 0
    later = read_range(topic, 0, ends[0][1], ends[0][1] + 1, 30, reader="librdkafka")
    assert later["value"].to_pylist() == [{"user": "late", "n": 1}]
    # A consumer idle too long (its task moved) is closed at the next read.
    monkeypatch.setattr(kafka_arrow._consumers, "idle_close_s", 0.0)
    read_range(topic, 1, ends[1][0], ends[1][0] + 1, 30, reader="librdkafka")
    assert [key[2] for key in kafka_arrow._consumers.kept()] == [1]


@pytest.mark.parametrize("reader", C_READERS)
def test_ranges_of_over_ten_thousand_records_on_a_kept_consumer_lose_none(broker, topic_name, reader):
    """The reader looks at the consumer's position every 10,000 records, and the position counts
    every record taken from librdkafka's queue (up to 1,024 at a time), held ones too: a range
    ending inside the batch holding its 10,000th record ended there, and its last records were
    lost (the peers benchmark, 1M events from Kafka at 100 ms: 2,009 records in 10 batches)."""
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(45_000):
        producer.produce(topic_name, value=b"v%d" % i, partition=0)
        if i % 5_000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    topic = KafkaTopic(broker.bootstrap_servers, topic_name, value_format="bytes")
    kafka_arrow._consumers.close_all()
    assert watermarks(topic, [0])[0] == (0, 45_000)
    cuts = [0, 10_001, 20_002, 20_500, 40_513, 45_000]  # each a little past a multiple of 10,000 records since its start
    for a, b in zip(cuts, cuts[1:]):
        piece = read_range(topic, 0, a, b, 30, reader=reader)
        assert piece["offset"].to_pylist() == list(range(a, b)), (a, b, piece.num_rows)
        assert piece["value"].to_pylist() == [b"v%d" % i for i in range(a, b)]


@pytest.mark.parametrize("reader", C_READERS)
def test_a_range_ending_at_a_transaction_marker_ends_without_waiting(broker, topic_name, reader):
    broker.create_topic(topic_name, 1)
    txn = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"{topic_name}-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(3):
        txn.produce(topic_name, key=b"k", value=f"v{i}".encode(), partition=0)
    txn.commit_transaction(30)
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    assert eventually(lambda: watermarks(topic, [0])[0], (0, 4)) == (0, 4)  # three records and the commit marker
    started = time.monotonic()
    table = read_range(topic, 0, 0, 4, 20, reader=reader)
    assert time.monotonic() - started < 5
    assert table["value"].to_pylist() == ["v0", "v1", "v2"]


@pytest.mark.parametrize("reader", C_READERS)
def test_the_c_reader_says_when_offsets_are_gone(broker, topic_name, reader):
    broker.create_topic(topic_name, 1)
    Producer({"bootstrap.servers": broker.bootstrap_servers}).produce(topic_name, value=b"x", partition=0)
    topic = KafkaTopic(broker.bootstrap_servers, topic_name)
    with pytest.raises(OffsetOutOfRangeError, match=f"'{topic_name}' partition 0: offset 50 is no longer there"):
        read_range(topic, 0, 50, 60, 20, reader=reader)


def test_big_endian_ints_decode_column_wise_around_nulls():
    raw = pa.array([struct.pack(">q", 5), None, struct.pack(">q", -2**40), None], pa.binary())
    assert kafka_arrow.decode_column(raw, "long", pa.int64()).to_pylist() == [5, None, -2**40, None]
    ints = pa.array([struct.pack(">i", -7), struct.pack(">i", 2**31 - 1)], pa.binary())
    assert kafka_arrow.decode_column(ints, "int", pa.int32()).to_pylist() == [-7, 2**31 - 1]
    assert kafka_arrow.decode_column(pa.array([b"\x00" * 7], pa.binary()), "long", pa.int64()) is None  # the per-record path names it


def test_json_decodes_column_wise_across_lines_and_around_null_records():
    lines = pa.array([b'{"user": "a", "n": 1}', b'{"n": 2, "extra": true}'], pa.binary())
    assert kafka_arrow.decode_column(lines, "json", VALUE_TYPE).to_pylist() == [{"user": "a", "n": 1}, {"user": None, "n": 2}]
    if json_columns._json_columns is not None:  # the parser in C; Arrow's reader takes one object per line, no null records
        assert kafka_arrow.decode_column(pa.array([b'{"n":\n1}'], pa.binary()), "json", VALUE_TYPE).to_pylist() == [{"user": None, "n": 1}]
        assert kafka_arrow.decode_column(pa.array([b'{"n": 1}', None], pa.binary()), "json", VALUE_TYPE).to_pylist() == [{"user": None, "n": 1}, None]
    assert kafka_arrow.decode_column(pa.array([b'{"n": [1]}', None], pa.binary()), "json", VALUE_TYPE) is None  # nested, and a null record


@pytest.mark.parametrize("values", [[b" ", b'{"n": 1}{"n": 2}'], [b'{"n": 1} {"n": 2}', b"\t"], [b'{"n": 1}{"n": 2}', b""]])
def test_json_with_a_blank_record_beside_one_holding_two_objects_is_rejected_not_shifted(values):
    """Arrow's reader gives a row per object, not per line: a blank value and one holding two
    objects made the right number of rows, each record given another's value."""
    raw = pa.array(values, pa.binary())
    assert kafka_arrow.decode_column(raw, "json", VALUE_TYPE) is None
    decoded, errors = kafka._decode(values, "json", VALUE_TYPE)
    assert decoded.to_pylist() == [None, None] and all(errors)  # the per-record path rejects both, by name
