"""Typed key-value stores read and written an Arrow array at a time, for batch processors.

A per-record store view costs a Python call, a pickle and a dictionary lookup per record; a batch
processor that paid that would lose what it gains by being vectorised. So a store declared with
Arrow types (``Stores.key_value_store_builder(supplier, key_type=..., value_type=...)``) keeps
keys and values as Kafka's serializers write them (:mod:`deltastreams.sinks.serde`), behind the same ``s``
prefix the per-record view puts before string and number keys, and reads decode a whole array at
once. Writes go through the changelogging store like every store's: pending until the batch
commits, changelogged once per key, exactly once.

A store whose values are times (int64) can be purged by time: ``purge(until)`` deletes the entries
at or before ``until`` through a time index (:mod:`~deltastreams.streams._internal.processing.batch_time_index`),
so a purge at every punctuation costs what it deletes, not the store's and the batch's size.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf.errors import ProcessingError
from deltastreams.sinks.serde import array_from_key_bytes, key_bytes
from deltastreams.state import ChangeLoggingStore
from deltastreams.streams._internal.processing.batch_time_index import TimeIndex
from deltastreams.topology.records import KEY, VALUE

_PREFIX = b"s"


class BatchKeyValueStore:
    """A processor's view of a typed store: ``get_many``, ``put_many``, ``delete_many``, scans."""

    def __init__(self, store: ChangeLoggingStore, key_type: pa.DataType, value_type: pa.DataType, node: str) -> None:
        self._store = store
        self.name = store.name
        self.key_type = key_type
        self.value_type = value_type
        self._node = node
        self._index: TimeIndex | None = None
        self._index_generation = -1

    # -- reads --------------------------------------------------------------------------------

    def get_many(self, keys: Any) -> pa.Array:
        """The value of each key (null where absent), in the keys' order."""
        return array_from_key_bytes(self._store.get_many(self._keys(keys)), self.value_type)

    def all(self) -> pa.Table:
        """Every entry (``key``, ``value``) in store order."""
        return self._scan(None, None)  # a typed store holds only typed keys: no bounds to check

    def range(self, key_from: Any, key_to: Any) -> pa.Table:
        """Entries with ``key_from <= key <= key_to`` in store order."""
        lo, hi = self._keys([key_from, key_to])
        return self._scan(lo, hi + b"\x00")

    def approximate_num_entries(self) -> int:
        return sum(1 for _ in self._store.range(_PREFIX, b"t"))

    # -- writes -------------------------------------------------------------------------------

    def put_many(self, keys: Any, values: Any) -> None:
        """Put each key's value; a null value deletes the key (Kafka's ``put(key, null)``)."""
        encoded = self._keys(keys)
        typed = self._array(values, self.value_type, "values")
        raws = key_bytes(typed)
        if len(raws) != len(encoded):
            raise ProcessingError(f"{self._node}: put_many on store {self.name!r} got {len(encoded)} keys and {len(raws)} values", node=self._node)
        self._store.put_many(encoded, raws)
        index = self._current_index()
        if index is not None:
            index.write(encoded, typed.to_pylist())

    def delete_many(self, keys: Any) -> None:
        encoded = self._keys(keys)
        self._store.delete_many(encoded)
        index = self._current_index()
        if index is not None:
            index.write(encoded, [None] * len(encoded))

    def purge(self, until: int) -> pa.Array:
        """Delete the entries whose value, a time, is at or before ``until`` (the values must be
        int64); returns their keys, oldest first. The first purge of a batch reads the store once;
        each later one costs only what it deletes."""
        index = self._current_index()
        if index is None:
            if not pa.types.is_int64(self.value_type):
                raise ProcessingError(f"{self._node}: purge() on store {self.name!r} needs int64 values (times), it holds {self.value_type}", node=self._node)
            keys, values = self._raw_scan(None, None)
            stored = keys.to_pylist()
            index = TimeIndex(zip(stored, array_from_key_bytes(values, self.value_type).to_pylist(), strict=True))
            self._index, self._index_generation = index, self._store.generation
        due = index.due(int(until))
        self._store.delete_many(due)
        return array_from_key_bytes(pa.array([k[1:] for k in due], pa.large_binary()), self.key_type)

    def _current_index(self) -> TimeIndex | None:
        """The time index, if a purge of this batch made one (a commit or abort since voids it)."""
        if self._index is not None and self._index_generation != self._store.generation:
            self._index = None
        return self._index

    # -- encoding -----------------------------------------------------------------------------

    def _keys(self, keys: Any) -> list[bytes]:
        array = self._array(keys, self.key_type, "keys")
        if array.null_count:
            raise ProcessingError(f"{self._node}: store {self.name!r} cannot hold a null key", node=self._node)
        return [_PREFIX + raw for raw in key_bytes(array)]

    def _array(self, values: Any, type_: pa.DataType, what: str) -> pa.Array:
        try:
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if isinstance(values, pa.Array):
                return values if values.type == type_ else values.cast(type_)
            return pa.array(values, type=type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise ProcessingError(f"{self._node}: store {self.name!r} holds {what} of type {type_}: {e}", node=self._node) from e

    def _scan(self, lo: bytes | None, hi: bytes | None) -> pa.Table:
        keys, values = self._raw_scan(lo, hi)
        stripped = pa.array([k[1:] for k in keys.to_pylist()], pa.large_binary())
        return pa.table({KEY: array_from_key_bytes(stripped, self.key_type), VALUE: array_from_key_bytes(values, self.value_type)})

    def _raw_scan(self, lo: bytes | None, hi: bytes | None) -> tuple[pa.Array, pa.Array]:
        """The committed entries overlaid with the batch's pending changes, merged with Arrow
        (a per-entry merge costs more than the rest of a scan), as stored."""
        committed = list(self._store.inner.range(lo, hi))
        pending = self._store.pending_in(lo, hi)
        keys = pa.array([k for k, _ in committed], pa.large_binary())
        values = pa.array([v for _, v in committed], pa.large_binary())
        if pending:
            changed = pa.array([k for k, _ in pending], pa.large_binary())
            unchanged = pc.invert(pc.is_in(keys, value_set=changed))
            written = pa.array([v for _, v in pending], pa.large_binary())
            live = written.is_valid()
            keys = pa.concat_arrays([keys.filter(unchanged), changed.filter(live)])
            values = pa.concat_arrays([values.filter(unchanged), written.filter(live)])
            order = pc.sort_indices(keys)  # bytewise, as the store orders keys
            keys, values = keys.take(order), values.take(order)
        return keys, values
