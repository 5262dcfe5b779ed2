"""Which records of a changelog segment log compaction keeps (Kafka's ``cleanup.policy=compact``).

A segment is every file of a partition but the newest. Only the last record of each key is
kept, at its original offset, and none of a key the newest file writes again. A store that has
applied the log up to any offset ``o`` and then applies the compacted log from ``o`` ends where
applying the full log from ``o`` would: for every key written at or after ``o``, its last record
is still there, and it is applied last.

A tombstone (null value) that is the last record of its key must stay for stores that have not
applied it yet and still hold the key. Once old enough it is dropped anyway, and the *clean
watermark* (1 + its offset) says which stores that breaks: those whose applied offset is below
it. They rebuild from offset 0, which needs no tombstone (an empty store has nothing to delete).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.sinks._internal.files import OFFSET, TIMESTAMP


@dataclass(frozen=True)
class CompactedSegment:
    rows: pa.Table
    """The kept records, in offset order."""
    watermark: int
    """1 + the largest offset of a dropped tombstone; 0 if no tombstone was dropped."""


def compact_rows(
    rows: pa.Table, *, key_column: str, value_column: str | None, tombstone_horizon: int, later_keys: pa.Array | None = None
) -> CompactedSegment:
    """Compact ``rows`` (one partition's segment, in offset order); ``later_keys`` are the keys
    the partition's newer records write. Tombstones are the records whose ``value_column`` is
    null (a topic whose value is spread over several columns has none); a tombstone that is its
    key's last record is dropped if its timestamp is at or below ``tombstone_horizon``. Records
    with a null key cannot be compacted and are kept."""
    n = rows.num_rows
    if n == 0:
        return CompactedSegment(rows, 0)
    keys = pc.dictionary_encode(rows.column(key_column).combine_chunks()).indices
    null_key = keys.is_null().to_numpy(zero_copy_only=False)
    codes = keys.fill_null(0).to_numpy(zero_copy_only=False)
    last = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
    keyed = np.flatnonzero(~null_key)
    last[codes[keyed]] = keyed  # later rows overwrite earlier ones: the last per key wins
    keep = np.zeros(n, dtype=bool)
    keep[last[last >= 0]] = True
    if later_keys is not None and len(later_keys):
        keep &= ~pc.is_in(rows.column(key_column), value_set=later_keys.drop_null()).to_numpy(zero_copy_only=False)
    keep |= null_key
    watermark = 0
    if value_column is not None:
        tombstone = rows.column(value_column).is_null().to_numpy(zero_copy_only=False)
        old = rows.column(TIMESTAMP).to_numpy() <= tombstone_horizon
        dropped = keep & tombstone & old & ~null_key
        if dropped.any():
            keep &= ~dropped
            watermark = int(rows.column(OFFSET).to_numpy()[dropped].max()) + 1
    return CompactedSegment(rows.filter(pa.array(keep)), watermark)
