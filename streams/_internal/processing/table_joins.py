"""Joins with tables: Kafka's KStreamKTableJoin and its table-table joins (KTableKTableInnerJoin,
LeftJoin, RightJoin, OuterJoin and the merge of both sides).

Every lookup reads the other table as of the looking-up record's turn (see
:mod:`deltastreams.streams._internal.processing.table`), so a batch holding both inputs gives what Kafka's
record-at-a-time processing of the same records gives.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.sinks.serde import json_bytes, key_bytes
from deltastreams.streams._internal.processing.flow import Flow
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.stateless import _typed
from deltastreams.streams._internal.processing.table import decode_row, row_keys, table_chain, table_getter
from deltastreams.streams._internal.processing.walk import AT_END, AT_START
from deltastreams.topology.functions import UserFunction
from deltastreams.topology.nodes import JoinKind, StreamGlobalTableJoinNode, StreamTableJoinNode, TableMergeNode, TableTableJoinNode
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE


def _call_joiner(joiner: UserFunction, key: Any, left: Any, right: Any, seq: int, node: str, context: ProcessContext) -> tuple[bool, Any]:
    """``(ok, joiner(left, right))``, or ``joiner(key, left, right)``; a joiner that raises
    rejects the record it was called for, not the batch."""
    try:
        return True, (joiner.fn(key, left, right) if joiner.takes_key else joiner.fn(left, right))
    except Exception as e:  # noqa: BLE001 - any user error goes to the dead letters
        context.bad.reject(seq, node, f"{joiner.describe()} raised {type(e).__name__}: {e}", key, left, error=e)
        return False, None


class StreamTableJoinOperator(Operator, node=StreamTableJoinNode):
    """Kafka's KStreamKTableJoin: a stream record with a null value is skipped and counted as
    dropped; with a null key it goes to the dead-letter topic in an inner join (Kafka drops it)
    and joins no row in a left join (Kafka 3.7+). The output keeps the stream record's key and
    timestamp."""

    node: StreamTableJoinNode

    def __init__(self, node: StreamTableJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.getter = table_getter(build, node.table, node.store, reader=node.name)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        values_column = flow.table.column(VALUE)
        if values_column.null_count:
            context.drop(values_column.null_count)
            flow = flow.filter(np.asarray(values_column.is_valid()))
        keys = flow.table.column(KEY)
        null_keys = np.asarray(keys.is_null()) if keys.null_count else np.zeros(len(flow), dtype=bool)
        if null_keys.any() and not self.node.left:
            seqs, values = flow.seqs, flow.values()
            for i in np.flatnonzero(null_keys):
                context.bad.reject(seqs[i], self.name, "null key: a stream-table join looks the key up in the table (Kafka drops these)", None, values[i])
            flow = flow.filter(~null_keys)
            null_keys = np.zeros(len(flow), dtype=bool)
        if not len(flow):
            return flow
        table_values: list[Any] = [None] * len(flow)
        keyed = np.flatnonzero(~null_keys)
        if len(keyed):
            with_key = flow.take(keyed)
            found = self.getter.lookup(with_key, row_keys(with_key), context)
            for i, value in zip(keyed, found.values, strict=True):
                table_values[i] = value
            if not found.kept.all():  # the table's chain rejected some stream records
                kept = np.ones(len(flow), dtype=bool)
                kept[keyed] = found.kept
                flow, table_values = flow.filter(kept), [v for v, k in zip(table_values, kept, strict=True) if k]
        if not self.node.left:
            matched = np.fromiter((v is not None for v in table_values), dtype=bool, count=len(table_values))
            flow = flow.filter(matched)
            table_values = [v for v in table_values if v is not None]
        return _join_each(self.name, self.node.joiner, flow, table_values, context)


def _join_each(node: str, joiner: UserFunction, flow: Flow, table_values: list[Any], context: ProcessContext) -> Flow:
    """``flow`` with each value replaced by ``joiner(value, table_value)``."""
    keys, values, seqs = flow.keys(), flow.values(), flow.seqs
    results: list[Any] = [None] * len(flow)
    ok = np.ones(len(flow), dtype=bool)
    for i, (k, v, t) in enumerate(zip(keys, values, table_values, strict=True)):
        ok[i], results[i] = _call_joiner(joiner, k, v, t, seqs[i], node, context)
    array, fits = _typed(node, results, None, flow, context.bad, "value")
    out = flow.replace(values=array)
    out._keys, out._values = flow._keys, results
    ok &= fits
    return out if ok.all() else out.filter(ok)


def _candidate_keys(key: Any) -> list[bytes]:
    """The serializations a selected key may have in a table: a Python int is an int64 or an
    int32 key depending on the table's topic, which the join does not know."""
    if isinstance(key, str):
        return [key.encode()]
    if isinstance(key, bytes):
        return [key]
    if isinstance(key, bool):
        return [b"\x01" if key else b"\x00"]
    if isinstance(key, int):
        out = [struct.pack(">q", key)] if -(2**63) <= key < 2**63 else []
        return out + ([struct.pack(">i", key)] if -(2**31) <= key < 2**31 else [])
    if isinstance(key, float):
        return [struct.pack(">d", key), struct.pack(">f", key)]
    return [json_bytes(key)]


class StreamGlobalTableJoinOperator(Operator, node=StreamGlobalTableJoinNode):
    """Kafka's KStreamGlobalKTableJoin: each record looks up ``key_selector(key, value)`` in the
    global table. A null value, or a selected key of None, skips the record (counted as dropped),
    except that a left join joins a record with a null key and a None selected key with nothing
    (Kafka 3.7+). The table has applied the whole
    batch's updates before any stream record (the task reads global tables first)."""

    node: StreamGlobalTableJoinNode

    def __init__(self, node: StreamGlobalTableJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.store = build.stores[node.store]

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        values_column = flow.table.column(VALUE)
        if values_column.null_count:
            context.drop(values_column.null_count)
            flow = flow.filter(np.asarray(values_column.is_valid()))
        if not len(flow):
            return flow
        selector = self.node.key_selector
        keys, values, seqs = flow.keys(), flow.values(), flow.seqs
        kept = np.ones(len(flow), dtype=bool)
        selected: list[Any] = [None] * len(flow)
        for i, (key, value) in enumerate(zip(keys, values, strict=True)):
            try:
                selected[i] = selector.fn(key, value)
            except Exception as e:  # noqa: BLE001 - any user error goes to the dead letters
                context.bad.reject(seqs[i], self.name, f"{selector.describe()} raised {type(e).__name__}: {e}", key, value, error=e)
                kept[i] = False
        # Kafka skips a record whose selected key is None, except, in a left join, a record
        # whose own key is None (it joins nothing).
        spared = self.node.left
        missing = np.fromiter((k is None and not (spared and rk is None) for k, rk in zip(selected, keys, strict=True)), dtype=bool, count=len(selected)) & kept
        context.drop(int(missing.sum()))
        kept &= ~missing
        if not kept.all():
            flow, selected = flow.filter(kept), [k for k, keep in zip(selected, kept, strict=True) if keep]
        candidates = [[] if k is None else _candidate_keys(k) for k in selected]
        found = iter(self.store.get_many([c for cs in candidates for c in cs]))
        table_values: list[Any] = []
        for cs in candidates:
            rows = [decode_row(next(found)) for _ in cs]
            table_values.append(next((row[0] for row in rows if row is not None), None))
        if not self.node.left:
            matched = np.fromiter((v is not None for v in table_values), dtype=bool, count=len(table_values))
            flow, table_values = flow.filter(matched), [v for v in table_values if v is not None]
        return _join_each(self.name, self.node.joiner, flow, table_values, context)


class TableTableJoinOperator(Operator, node=TableTableJoinNode):
    """One side of Kafka's table-table join (KTableKTableInnerJoin / LeftJoin / RightJoin /
    OuterJoin, without old values, as Kafka runs them when nothing downstream asks for old
    values): an update of this side looks up the other table as of its turn and forwards the
    joined row, or a delete; the result's timestamp is the larger of the two rows'."""

    node: TableTableJoinNode

    def __init__(self, node: TableTableJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.getter = table_getter(build, node.other, node.store, reader=node.name)
        # With caching, Kafka forwards a table's updates when its cache flushes at commit, so a
        # table-table join sees both tables as they stand at the end of the batch, and an
        # update's old value is the row from before the batch. Without, record by record.
        self.caching = build.caching
        # Kafka makes both sides send old values: an update's old value is this table as of
        # just before the update, read the way the other side reads it.
        (this_table,) = parents
        source, _ = table_chain(build, this_table)
        self.own = table_getter(build, this_table, source.store)

    def _joined(self, new: Any, old: Any, other: Any) -> tuple[bool, bool]:
        """``(forward, call_joiner)`` for an update from ``old`` to ``new`` (None: no row)
        meeting ``other``."""
        kind, left = self.node.kind, self.node.this_is_left
        if kind is JoinKind.INNER:
            return other is not None, other is not None and new is not None
        if kind is JoinKind.OUTER:
            return other is not None or new is not None or old is not None, other is not None or new is not None
        if left:  # the left side of a left join
            return other is not None or new is not None or old is not None, new is not None
        return other is not None, other is not None  # the right side of a left join

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        if not len(flow):
            return flow
        raw_keys = row_keys(flow)  # (window start, key) for windowed tables
        other = self.getter.lookup(flow, raw_keys, context, AT_END if self.caching else None)
        others, other_stamps, kept = other.values, other.stamps, other.kept
        if self.node.kind is JoinKind.INNER or (self.node.kind is JoinKind.LEFT and not self.node.this_is_left):
            olds: list[Any] = [None] * len(flow)
        else:
            own = self.own.lookup(flow, raw_keys, context, AT_START if self.caching else None)
            olds, kept = own.values, kept & own.kept
        if not kept.all():  # a table's chain rejected some updates
            flow = flow.filter(kept)
            others, other_stamps, olds = ([x for x, k in zip(items, kept, strict=True) if k] for items in (others, other_stamps, olds))
        this_is_left = self.node.this_is_left
        keys, news, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        rows, values, times = [], [], []
        for i, (key, new, old, other, other_ts) in enumerate(zip(keys, news, olds, others, other_stamps, strict=True)):
            forward, call = self._joined(new, old, other)
            if not forward:
                continue
            value = None
            if call:
                left_value, right_value = (new, other) if this_is_left else (other, new)
                ok, value = _call_joiner(self.node.joiner, key, left_value, right_value, seqs[i], self.name, context)
                if not ok:
                    continue
            rows.append(i)
            values.append(value)
            times.append(int(stamps[i]) if other_ts is None else max(int(stamps[i]), int(other_ts)))
        out = flow.take(np.asarray(rows, dtype=np.int64))
        array, fits = _typed(self.name, values, None, out, context.bad, "value")
        table = out.table.set_column(out.table.schema.get_field_index(TIMESTAMP), TIMESTAMP, pa.array(times, pa.int64()))
        table = table.set_column(table.schema.get_field_index(VALUE), VALUE, array)
        joined = Flow(table, out.windowed, out._keys, values)
        return joined if fits.all() else joined.filter(fits)


class TableMergeOperator(Operator, node=TableMergeNode):
    """Both sides' results, already in the task's order (``_seq``)."""

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return flow
