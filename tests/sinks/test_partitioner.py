import random

import pyarrow as pa
import pytest

from deltastreams.sinks import murmur2, partition_for, partitions_for
from deltastreams.sinks.partitioner import murmur2_many
from deltastreams.sinks.serde import key_bytes

# Kafka's UtilsTest.testMurmur2 vectors (signed 32-bit results of Utils.murmur2).
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS.items())
def test_murmur2_matches_kafka_utils(data, expected):
    assert murmur2(data) == expected


def test_vectorised_murmur2_matches_kafka_vectors_and_scalar_version():
    assert list(murmur2_many(list(KAFKA_VECTORS))) == list(KAFKA_VECTORS.values())
    rng = random.Random(7)
    keys = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 37))) for _ in range(3000)]
    assert list(murmur2_many(keys)) == [murmur2(k) for k in keys]


def test_partition_is_positive_murmur2_modulo_partitions():
    assert partition_for(b"foobar", 50) == (-790332482 & 0x7FFFFFFF) % 50
    assert partition_for(b"21", 3) == (-973932308 & 0x7FFFFFFF) % 3


def test_partitions_for_strings_hashes_utf8_like_kafka_string_serializer():
    keys = pa.array(["foobar", "21", None, "foobar", "ünïcode"])
    parts = partitions_for(keys, 7)
    assert parts.tolist() == [
        partition_for(b"foobar", 7),
        partition_for(b"21", 7),
        -1,
        partition_for(b"foobar", 7),
        partition_for("ünïcode".encode(), 7),
    ]


def test_integer_keys_serialize_like_kafka_integer_and_long_serializers():
    assert key_bytes(pa.array([1, -2], pa.int32())) == [b"\x00\x00\x00\x01", b"\xff\xff\xff\xfe"]
    assert key_bytes(pa.array([1], pa.int64())) == [b"\x00" * 7 + b"\x01"]
    assert partitions_for(pa.array([42], pa.int32()), 5).tolist() == [partition_for(b"\x00\x00\x00\x2a", 5)]
