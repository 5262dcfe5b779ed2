"""Times as key bytes that sort as the times do (negative ones included), and longs kept under
bookkeeping keys: shared by the stores whose keys hold times."""

from __future__ import annotations

import struct

_LONG = struct.Struct(">q")
_TIME = struct.Struct(">Q")


def pack_time(time: int) -> bytes:
    """Unsigned, offset by 2**63: byte order is time order."""
    return _TIME.pack(time + 2**63)


def unpack_time(raw: bytes, offset: int = 0) -> int:
    return _TIME.unpack_from(raw, offset)[0] - 2**63


def pack_long(value: int) -> bytes:
    return _LONG.pack(value)


def get_long(store, key: bytes, default: int | None) -> int | None:
    """The long stored under ``key``, or ``default``."""
    raw = store.get(key)
    return default if raw is None else _LONG.unpack(raw)[0]


def unpack_long(raw: bytes, offset: int = 0) -> int:
    return _LONG.unpack_from(raw, offset)[0]


def purge_indexed(store, floor_key: bytes, cutoff: int) -> bool:
    """Delete every entry whose time index ``t | time | ...`` (value: the entry's key) has a time
    at or before ``cutoff``, scanning from the floor kept under ``floor_key`` (not from key 0:
    RocksDB keeps deleted keys in its memtable, and scans over them grew slow in a soak). Returns
    whether it ran."""
    floor = get_long(store, floor_key, None)
    if floor is not None and cutoff < floor:
        return False
    low = b"t" if floor is None else b"t" + pack_time(floor)
    for index_key, data_key in list(store.range(low, b"t" + pack_time(cutoff + 1))):
        store.delete(index_key)
        store.delete(data_key)
    store.put(floor_key, pack_long(cutoff + 1))
    return True
