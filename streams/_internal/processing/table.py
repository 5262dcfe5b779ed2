"""Tables: Kafka's KTableSource, KTableFilter and KTableMapValues, and reading a table by key.

A table's flow is its stream of updates: ``value`` is the new value, ``None`` a delete. A
materialized source keeps the latest value per key in its store, as ``pickle((value,
timestamp))`` under the key's serialized bytes.

The core runs a batch operator by operator, so by the time a join runs, its table's source has
applied the whole batch. Kafka processes record by record: a record sees the table as it stood
when that record came up in the task's input order (``_seq``), at its step of the record's
depth-first walk (after the steps of records forwarded before it for the same input record). The
source therefore logs the batch's changes by turn (:class:`BatchChanges`,
:mod:`deltastreams.streams._internal.processing.walk`), and reads by key (:class:`TableGetter`) see the table
*as of* the reading step's turn: the last change before it, else the value from before the
batch. A table derived by ``filter``/``map_values`` is read through the same functions applied to
the looked-up values (Kafka's value getters), so no derived table needs a store.
"""

from __future__ import annotations

import bisect
import pickle
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf.errors import TopologyError
from deltastreams.sinks.serde import key_bytes
from deltastreams.streams._internal.processing.flow import SEQ, Flow, flow_schema, infer_array
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.stateless import _call_each, _evaluate, _typed
from deltastreams.streams._internal.processing.walk import AT_START, Turn, turns
from deltastreams.topology.nodes import (
    AggregateNode,
    AggregationKind,
    CogroupMergeNode,
    JoinKind,
    TableAggregateNode,
    TableFilterNode,
    TableMapValuesNode,
    TableMergeNode,
    TableSourceNode,
    TableTableJoinNode,
)
from deltastreams.state.window import time_key
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE, WINDOW_START


def row_keys(flow: Flow) -> list[bytes]:
    """The store keys of a table's rows: the key's bytes, or, for a windowed table (Kafka's
    ``Windowed<K>`` keys), the window store's key of (window start, key), so a windowed
    aggregation's store is read by key as Kafka's value getter reads it (``fetch(key, start)``)."""
    raw = key_bytes(flow.table.column(KEY))
    if not flow.windowed:
        return raw
    starts = flow.table.column(WINDOW_START).to_pylist()
    return [time_key(int(start), kb) for start, kb in zip(starts, raw, strict=True)]


@dataclass
class _KeyChanges:
    before: bytes | None
    """The stored value when the batch started."""
    turns: list[Turn] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)


@dataclass
class BatchChanges:
    """The changes a table source applied in the current batch, by key, in turn order."""

    by_key: dict[bytes, _KeyChanges] = field(default_factory=dict)

    def clear(self) -> None:
        self.by_key.clear()

    def record(self, key: bytes, before: bytes | None, at: Turn, value: bytes | None) -> None:
        """``key`` changed to ``value`` at turn ``at`` (:func:`~deltastreams.streams._internal.processing.walk.turn`)."""
        changes = self.by_key.get(key)
        if changes is None:
            changes = self.by_key[key] = _KeyChanges(before)
        if changes.turns and at < changes.turns[-1]:  # (records a cache flushed, out of input order)
            i = bisect.bisect_right(changes.turns, at)
            changes.turns.insert(i, at)
            changes.values.insert(i, value)
            return
        changes.turns.append(at)
        changes.values.append(value)

    def as_of(self, key: bytes, at: Turn) -> tuple[bool, bytes | None]:
        """``(changed, value)``: whether ``key`` changed in this batch, and its raw value just
        before turn ``at`` if so (``AT_END``: after the batch; ``AT_START``: before it)."""
        changes = self.by_key.get(key)
        if changes is None:
            return False, None
        i = bisect.bisect_left(changes.turns, at)
        return True, (changes.values[i - 1] if i else changes.before)


def encode_row(value: Any, timestamp: int) -> bytes:
    return pickle.dumps((value, int(timestamp)), protocol=5)


def decode_row(raw: bytes | None) -> tuple[Any, int] | None:
    """``(value, timestamp)`` of a stored row, None for no row."""
    return None if raw is None else pickle.loads(raw)


class TableView:
    """Read-only typed access to a table store (Kafka's ``ReadOnlyKeyValueStore``)."""

    def __init__(self, name: str, store) -> None:
        self.name = name
        self._store = store

    def get(self, key: Any) -> Any:
        (raw_key,) = key_bytes(pa.array([key]))
        stored = decode_row(self._store.get(raw_key))
        return None if stored is None else stored[0]


class TableSourceOperator(Operator, node=TableSourceNode):
    """Latest value per key. Records with a null key are skipped and counted as dropped, as in
    Kafka (a table has no row for them)."""

    node: TableSourceNode

    def __init__(self, node: TableSourceNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.caching = build.caching
        self.store = build.stores[node.store] if node.store is not None else None
        self.changes = build.table_changes.setdefault(node.store, BatchChanges()) if node.store is not None else None
        self.rank = build.ranks.get(node.name, 0)

    def store_view(self) -> TableView | None:
        return TableView(self.node.store, self.store) if self.store is not None else None

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        keys = flow.table.column(KEY)
        if keys.null_count:
            context.drop(keys.null_count)
            flow = flow.filter(np.asarray(keys.is_valid()))
        if self.store is None:
            return flow
        self.changes.clear()
        if not len(flow):
            return flow
        raw_keys = key_bytes(flow.table.column(KEY))
        distinct = list(dict.fromkeys(raw_keys))
        before = dict(zip(distinct, self.store.get_many(distinct), strict=True))  # one read for the batch
        values, stamps, at = flow.values(), flow.timestamps, turns(flow, self.rank)
        last: dict[bytes, int] = {}
        for i, (kb, value) in enumerate(zip(raw_keys, values, strict=True)):
            encoded = None if value is None else encode_row(value, stamps[i])
            if encoded is None:
                self.store.delete(kb)
            else:
                self.store.put(kb, encoded)
            self.changes.record(kb, before[kb], at[i], encoded)
            last.pop(kb, None)
            last[kb] = i
        if not self.caching:
            return flow
        # Kafka's cache: the last update per key of the commit, in the order keys were last
        # updated; a delete of a key the store did not hold before is not forwarded at all.
        flushed = [i for kb, i in last.items() if values[i] is not None or before[kb] is not None]
        return flow.take(np.asarray(flushed, dtype=np.int64))


def _tombstones_where(flow: Flow, keep: np.ndarray, values: pa.ChunkedArray | pa.Array | None = None) -> Flow:
    """``flow`` (with ``values`` if given) whose rows outside ``keep`` become deletes."""
    column = flow.table.column(VALUE) if values is None else values
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    masked = pc.if_else(pa.array(keep), column, pa.nulls(len(column), column.type))
    return flow.replace(values=masked)


class TableFilterOperator(Operator, node=TableFilterNode):
    """An update whose value fails the predicate forwards a delete. With ``old_values`` (Kafka's
    ``sendOldValues``), an update whose old value failed too (or was absent) is not forwarded."""

    node: TableFilterNode

    def __init__(self, node: TableFilterNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self._build = build
        self._olds: TableGetter | None = None
        """This filter's table, read as of just before each update: made when first needed (the
        getter runs this node's :meth:`transform` on an operator of its own, which must not make
        one in turn)."""
        if node.old_values:
            for store in root_stores(build, node.name):  # the roots log their changes from the first batch
                build.table_changes.setdefault(store, BatchChanges())

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        out = self.transform(flow, context)
        if not self.node.old_values or not len(out):
            return out
        if self._olds is None:
            self._olds = old_values_getter(self._build, self.name)
        absent = np.asarray(out.table.column(VALUE).is_null())
        if not absent.any():
            return out
        # Kafka's cache forwards an update with the old value the store held before the commit.
        olds = self._olds.lookup(out, row_keys(out), context, AT_START if self._build.caching else None)
        was_absent = np.fromiter((v is None for v in olds.values), dtype=bool, count=len(out))
        return out.filter(~(absent & was_absent))

    def transform(self, flow: Flow, context: ProcessContext) -> Flow:
        present = np.asarray(flow.table.column(VALUE).is_valid())
        if not present.any():
            return flow
        predicate, negate = self.node.predicate, self.node.negate
        if predicate.is_arrow:
            (mask,), flow = _evaluate(self.name, predicate, flow, context.bad)
            present = np.asarray(flow.table.column(VALUE).is_valid())
            passed = np.asarray(mask.combine_chunks().fill_null(negate)) != negate
            return _tombstones_where(flow, present & passed)
        live = flow.filter(present)
        results, ok = _call_each(self.name, predicate, live, context.bad)
        passed = np.zeros(len(flow), dtype=bool)
        rejected = np.zeros(len(flow), dtype=bool)
        rows = np.flatnonzero(present)
        passed[rows] = np.fromiter((bool(r) != negate for r in results), dtype=bool, count=len(results)) & ok
        rejected[rows] = ~ok
        out = _tombstones_where(flow, passed)
        return out.filter(~rejected) if rejected.any() else out


class TableMapValuesOperator(Operator, node=TableMapValuesNode):
    """New values; a delete stays a delete (the mapper never sees ``None``)."""

    node: TableMapValuesNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return self.transform(flow, context)

    def transform(self, flow: Flow, context: ProcessContext) -> Flow:
        mapper = self.node.mapper
        present = np.asarray(flow.table.column(VALUE).is_valid())
        if mapper.is_arrow:
            (values,), flow = _evaluate(self.name, mapper, flow, context.bad)
            present = np.asarray(flow.table.column(VALUE).is_valid())
            return _tombstones_where(flow, present, values)
        rows = np.flatnonzero(present)
        live = flow.take(rows)
        results, ok = _call_each(self.name, mapper, live, context.bad)
        mapped: list[Any] = [None] * len(flow)
        keep = np.ones(len(flow), dtype=bool)
        for j, i in enumerate(rows):
            if ok[j]:
                mapped[i] = results[j]
            else:
                keep[i] = False
        array, fits = _typed(self.name, mapped, None, flow, context.bad, "value")
        out = flow.replace(values=array)
        out._keys, out._values = flow._keys, mapped
        keep &= fits
        return out if keep.all() else out.filter(keep)


@dataclass
class Lookup:
    """What a table holds for each reading record, aligned with those records."""

    values: list[Any]
    """The row's value (None: no row)."""
    stamps: list[int | None]
    """The row's timestamp (None: no row)."""
    kept: np.ndarray
    """False where the table's filter or mapper failed on the row: the reading record went to the
    dead-letter topic and must go no further."""

    def select(self, items: Sequence[Any]) -> list[Any]:
        return [item for item, keep in zip(items, self.kept, strict=True) if keep]


_ROW = "_row"
"""A looked-up row's position among the reading records, while a chain runs over them."""


class TableGetter:
    """Reads a table by key as of a reading step's turn (operator ``rank`` reading each record
    of a flow): the root's store and batch changes (a table source, or an aggregation), or a
    table-table join's two tables (``root``), then the chain of filters and value mappers
    between the root and the table read. ``decode`` reads the root's stored rows."""

    def __init__(
        self, store, changes: BatchChanges, chain: Sequence[TableFilterOperator | TableMapValuesOperator], decode=None, rank: int = 0, root: JoinGetter | None = None
    ) -> None:
        self.store = store
        self.changes = changes
        self.chain = chain
        self.decode = decode if decode is not None else decode_row
        self.rank = rank
        self.root = root

    def lookup(self, stream: Flow, raw_keys: list[bytes], context: ProcessContext, at: Turn | None = None, *, trim: int = 0) -> Lookup:
        """Per record of ``stream``, the table's row for its key: as of the record's turn, or as
        of ``at`` (:data:`AT_START`, :data:`AT_END`) for every record. ``trim``: the records
        went through that many meeting points (table-table joins) since the step read as of."""
        if self.root is not None:
            joined = self.root.lookup(stream, raw_keys, context, at, trim=trim)
            return self._through_chain(stream, joined.values, joined.stamps, joined.kept, context)
        rows: list[tuple[Any, int] | None] = [None] * len(raw_keys)
        unchanged = []
        reading = turns(stream, self.rank, trim=trim) if at is None else [at] * len(raw_keys)
        for i, (kb, when) in enumerate(zip(raw_keys, reading, strict=True)):
            changed, raw = self.changes.as_of(kb, when)
            if changed:
                rows[i] = self.decode(raw)
            else:
                unchanged.append(i)
        for i, raw in zip(unchanged, self.store.get_many([raw_keys[i] for i in unchanged]), strict=True):
            rows[i] = self.decode(raw)
        values = [None if r is None else r[0] for r in rows]
        stamps = [None if r is None else r[1] for r in rows]
        return self._through_chain(stream, values, stamps, np.ones(len(rows), dtype=bool), context)

    def _through_chain(self, stream: Flow, values: list[Any], stamps: list[int | None], kept: np.ndarray, context: ProcessContext) -> Lookup:
        if not self.chain:
            return Lookup(values, stamps, kept)
        # Run the chain over the looked-up rows: same _seq (errors point at the looking-up record),
        # and each row's position, which tells the rows the chain rejected (records forwarded for
        # one input record share its _seq).
        looked_up, _ = infer_array(values, None)
        table = Flow(
            pa.table(
                [stream.table.column(SEQ), stream.table.column(TIMESTAMP), stream.table.column(KEY), looked_up],
                schema=flow_schema(stream.key_type, looked_up.type, False),
            ).append_column(_ROW, pa.array(np.arange(len(stream), dtype=np.int64))),
            False,
            stream.keys(),
            values,
        )
        for operator in self.chain:
            table = operator.transform(table, context)
        rows = table.table.column(_ROW).to_numpy()
        survived = np.zeros(len(stream), dtype=bool)
        survived[rows] = True
        kept = kept & survived
        values = [None] * len(stream)
        for i, value in zip(rows, table.values(), strict=True):
            if kept[i]:
                values[i] = value
        return Lookup(values, [t if v is not None else None for t, v in zip(stamps, values, strict=True)], kept)


class JoinGetter:
    """A table-table join's result read by key, from both joined tables (Kafka's
    KTableKTable...JoinValueGetter): ``joiner(left, right)`` where the join has a row (both
    tables do for an inner join; the left one for a left join; either for an outer join), timed
    as the later of the two rows."""

    def __init__(self, node: TableTableJoinNode, left: TableGetter, right: TableGetter) -> None:
        self.node, self.left, self.right = node, left, right

    def lookup(self, stream: Flow, raw_keys: list[bytes], context: ProcessContext, at: Turn | None = None, *, trim: int = 0) -> Lookup:
        # Each record came through the join's meeting point (an entry of its walk) since the
        # update of a joined table the reading step reads as of.
        left = self.left.lookup(stream, raw_keys, context, at, trim=trim + 1)
        right = self.right.lookup(stream, raw_keys, context, at, trim=trim + 1)
        kept = left.kept & right.kept
        kind, joiner = self.node.kind, self.node.joiner
        values: list[Any] = [None] * len(raw_keys)
        stamps: list[int | None] = [None] * len(raw_keys)
        keys, seqs = stream.keys(), stream.seqs
        for i, (lv, rv) in enumerate(zip(left.values, right.values, strict=True)):
            present = (lv is not None and rv is not None) if kind is JoinKind.INNER else lv is not None if kind is JoinKind.LEFT else (lv is not None or rv is not None)
            if not present or not kept[i]:
                continue
            try:
                values[i] = joiner.fn(keys[i], lv, rv) if joiner.takes_key else joiner.fn(lv, rv)
            except Exception as e:  # noqa: BLE001 - the reading record goes to the dead letters, as with a chain's error
                context.bad.reject(int(seqs[i]), self.node.name, f"{joiner.describe()} raised {type(e).__name__}: {e}", keys[i], lv, error=e)
                kept[i] = False
                continue
            stamps[i] = max(t for t in (left.stamps[i], right.stamps[i]) if t is not None)
        return Lookup(values, stamps, kept)


TABLE_ROOTS = (TableSourceNode, AggregateNode, TableAggregateNode, CogroupMergeNode)
"""Nodes that keep a table in a store, which joins and re-groupings read by key."""


def _walk(build: BuildContext, table: str) -> tuple[str, list[str]]:
    """The node under ``table``'s filters and value mappers, and those nodes from it up."""
    nodes, parents = build.topology.nodes, build.topology.parents
    chain, name = [], table
    while isinstance(nodes[name], (TableFilterNode, TableMapValuesNode)):
        chain.append(name)
        (name,) = parents[name]
    return name, list(reversed(chain))


def _join_sides(build: BuildContext, merge: str) -> tuple[TableTableJoinNode, str, str]:
    """A table-table join's left side node, and its left and right tables."""
    parents = build.topology.parents
    side = next(build.topology.nodes[n] for n in parents[merge] if build.topology.nodes[n].this_is_left)
    (left,) = parents[side.name]
    return side, left, side.other


def old_values_getter(build: BuildContext, table: str) -> TableGetter:
    """Reads ``table`` as of just before each update of the tables under it (the old value
    Kafka forwards with an update, ``sendOldValues``), through table-table joins too."""
    root, chain = _walk(build, table)
    if not isinstance(build.topology.nodes[root], TableMergeNode):
        return table_getter(build, table, table_chain(build, table)[0].store)
    side, left, right = _join_sides(build, root)
    operators = [Operator.for_node(build.topology.nodes[n], build.topology.parents[n], build) for n in chain]
    joined = JoinGetter(side, old_values_getter(build, left), old_values_getter(build, right))
    return TableGetter(None, BatchChanges(), operators, root=joined)


def root_stores(build: BuildContext, table: str) -> list[str]:
    """The stores ``table`` is read from: its root's, or both joined tables' roots'."""
    root, _ = _walk(build, table)
    if isinstance(build.topology.nodes[root], TableMergeNode):
        _, left, right = _join_sides(build, root)
        return root_stores(build, left) + root_stores(build, right)
    return [table_chain(build, table)[0].store]


def table_getter(build: BuildContext, table: str, store: str, reader: str | None = None) -> TableGetter:
    """Reads ``table`` for operator ``reader``, seeing what operators before it in the walk of a
    record changed; without ``reader``, as of just before the table's own change at a record
    (the old value of an update)."""
    root, chain = table_chain(build, table)
    operators = [Operator.for_node(build.topology.nodes[n], build.topology.parents[n], build) for n in chain]
    decode = decode_count if isinstance(root, AggregateNode) and root.aggregation.kind is AggregationKind.COUNT else decode_row
    rank = build.ranks.get(reader if reader is not None else root.name, 0)
    return TableGetter(build.stores[store], build.table_changes.setdefault(store, BatchChanges()), operators, decode, rank)


def table_chain(build: BuildContext, table: str) -> tuple[TableSourceNode | AggregateNode | TableAggregateNode, list[str]]:
    """The node keeping the table under ``table`` (a source or an aggregation) and the
    filter/map_values nodes from it up to ``table``."""
    nodes, parents = build.topology.nodes, build.topology.parents
    chain, name = [], table
    while not isinstance(nodes[name], TABLE_ROOTS):
        if not isinstance(nodes[name], (TableFilterNode, TableMapValuesNode)):
            raise TopologyError(f"{table}: only tables (sources, aggregations), filtered or mapped, can be read by key", node=table)
        chain.append(name)
        (name,) = parents[name]
    root = nodes[name]
    if isinstance(root, CogroupMergeNode):
        root = root.aggregation  # a cogroup's table is its aggregation's (named as the merge)
    if not isinstance(root, TABLE_ROOTS):
        raise TopologyError(f"{table}: only tables (sources, aggregations), filtered or mapped, can be read by key", node=table)
    return root, list(reversed(chain))


_COUNT_ROW = struct.Struct(">qq")


def decode_count(raw: bytes | None) -> tuple[int, int] | None:
    """``(count, timestamp)`` of a count's stored row (see the aggregate operator)."""
    return None if raw is None else _COUNT_ROW.unpack(raw)
