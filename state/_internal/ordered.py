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
