"""Kafka's default partitioner: records land in the partition a Kafka producer would pick.

``partition = (murmur2(key bytes) & 0x7fffffff) % num_partitions``, with ``murmur2`` exactly
Kafka's ``Utils.murmur2`` (a signed 32-bit result) and key bytes as Kafka's serializers produce
them (see :mod:`deltastreams.sinks.serde`). Never Python's ``hash()``, which is salted per process.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.sinks.serde import key_bytes

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the signed 32-bit hash of ``data``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for serialized ``key``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def murmur2_many(keys: list[bytes]) -> np.ndarray:
    """``murmur2`` of every key, vectorised over 4-byte words (int64 array of signed 32-bit values)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
    width = int(-(-lengths.max() // 4) * 4) or 4
    padded = np.zeros((n, width), dtype=np.uint8)
    flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
    rows = np.repeat(np.arange(n), lengths)
    cols = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[rows, cols] = flat
    words = padded.view("<u4").astype(np.uint64)  # little-endian words, as Kafka reads them
    m = np.uint64(_M)
    mask = np.uint64(_MASK32)
    h = (np.uint64(_SEED) ^ lengths.astype(np.uint64)) & mask
    whole_words = lengths // 4
    for j in range(width // 4):
        live = whole_words > j
        k = (words[:, j] * m) & mask
        k ^= k >> np.uint64(24)
        k = (k * m) & mask
        h = np.where(live, ((h * m) & mask) ^ k, h)
    rest = lengths % 4
    tail_start = whole_words * 4
    row_ids = np.arange(n)
    for offset, shift in ((2, 16), (1, 8), (0, 0)):
        has = rest > offset
        byte = padded[row_ids, np.minimum(tail_start + offset, width - 1)].astype(np.uint64)
        h = np.where(has, h ^ (byte << np.uint64(shift)), h)
    h = np.where(rest > 0, (h * m) & mask, h)
    h ^= h >> np.uint64(13)
    h = (h * m) & mask
    h ^= h >> np.uint64(15)
    signed = h.astype(np.int64)
    return np.where(signed >= 1 << 31, signed - (1 << 32), signed)


def partitions_for(keys: pa.Array | pa.ChunkedArray, num_partitions: int) -> np.ndarray:
    """Target partition of every key of an Arrow array (int32; -1 where the key is null).

    Hashes each distinct key once: keys repeat a lot in streams, so the Python part runs over the
    dictionary, not over the records.
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    if num_partitions == 1:
        out = np.zeros(n, dtype=np.int32)
        if keys.null_count:
            out[np.asarray(keys.is_null())] = -1
        return out
    encoded = pc.dictionary_encode(keys)
    dictionary_bytes = key_bytes(encoded.dictionary)
    per_distinct = (murmur2_many(dictionary_bytes) & 0x7FFFFFFF) % num_partitions
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    if encoded.indices.null_count:
        valid = np.asarray(encoded.indices.is_valid())
        out = np.full(n, -1, dtype=np.int32)
        out[valid] = per_distinct[indices[valid].astype(np.int64)]
        return out
    return per_distinct[indices].astype(np.int32)
