"""Tables and the stream-table join: Kafka's KTableSource, KTableFilter, KTableMapValues and
KStreamKTableJoin.

A table's flow is its stream of updates: ``value`` is the new value, ``None`` a delete. A
materialized source keeps the latest value per key in its store, as ``pickle((value,
timestamp))`` under the key's serialized bytes.

The core runs a batch operator by operator, so by the time a join runs, its table's source has
applied the whole batch. Kafka processes record by record: a stream record sees the table as it
stood when that record came up in the task's input order (``_seq``). The source therefore logs
the batch's changes (:class:`BatchChanges`), and a join's lookups read the table *as of* each
stream record's ``_seq``: the last change before it, else the value from before the batch. A
table derived by ``filter``/``map_values`` is read through the same functions applied to the
looked-up values (Kafka's value getters), so a join never needs those tables stored.
"""

from __future__ import annotations

import bisect
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from conf.errors import TopologyError
from sinks.serde import key_bytes
from streams._internal.processing.flow import SEQ, Flow, flow_schema, infer_array
from streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from streams._internal.processing.stateless import _call_each, _evaluate, _typed
from topology.nodes import (
    AggregationKind,
    JoinKind,
    StreamTableJoinNode,
    TableAggregateNode,
    TableFilterNode,
    TableMapValuesNode,
    TableMergeNode,
    TableSelectNode,
    TableSourceNode,
    TableTableJoinNode,
)
from topology.records import KEY, TIMESTAMP, VALUE


@dataclass
class _KeyChanges:
    before: bytes | None
    """The stored value when the batch started."""
    seqs: list[int] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)


@dataclass
class BatchChanges:
    """The changes a table source applied in the current batch, by key, in ``_seq`` order."""

    by_key: dict[bytes, _KeyChanges] = field(default_factory=dict)

    def clear(self) -> None:
        self.by_key.clear()

    def record(self, key: bytes, before: bytes | None, seq: int, value: bytes | None) -> None:
        changes = self.by_key.get(key)
        if changes is None:
            changes = self.by_key[key] = _KeyChanges(before)
        changes.seqs.append(seq)
        changes.values.append(value)

    def as_of(self, key: bytes, seq: int) -> tuple[bool, bytes | None]:
        """``(changed, value)``: whether ``key`` changed in this batch, and its raw value just
        before record ``seq`` if so (``AT_END``: after the batch; ``AT_START``: before it)."""
        changes = self.by_key.get(key)
        if changes is None:
            return False, None
        i = bisect.bisect_left(changes.seqs, seq)
        return True, (changes.values[i - 1] if i else changes.before)


AT_START, AT_END = -1, 2**62
"""Sequence numbers before and after every record of a batch."""


def _encode(value: Any, timestamp: int) -> bytes:
    return pickle.dumps((value, int(timestamp)), protocol=5)


def _decode(raw: bytes | None) -> tuple[Any, int] | None:
    """``(value, timestamp)`` of a stored row, None for no row."""
    return None if raw is None else pickle.loads(raw)


class _TableView:
    """Read-only typed access to a table store (Kafka's ``ReadOnlyKeyValueStore``)."""

    def __init__(self, name: str, store) -> None:
        self.name = name
        self._store = store

    def get(self, key: Any) -> Any:
        (raw_key,) = key_bytes(pa.array([key]))
        stored = _decode(self._store.get(raw_key))
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

    def store_view(self) -> _TableView | None:
        return _TableView(self.node.store, self.store) if self.store is not None else None

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
        values, stamps, seqs = flow.values(), flow.timestamps, flow.seqs
        last: dict[bytes, int] = {}
        for i, (kb, value) in enumerate(zip(raw_keys, values, strict=True)):
            before = self.store.get(kb) if kb not in self.changes.by_key else None
            encoded = None if value is None else _encode(value, stamps[i])
            if encoded is None:
                self.store.delete(kb)
            else:
                self.store.put(kb, encoded)
            self.changes.record(kb, before, int(seqs[i]), encoded)
            last.pop(kb, None)
            last[kb] = i
        if not self.caching:
            return flow
        # Kafka's cache: the last update per key of the commit, in the order keys were last updated.
        return flow.take(np.fromiter(last.values(), dtype=np.int64, count=len(last)))


def _tombstones_where(flow: Flow, keep: np.ndarray, values: pa.ChunkedArray | pa.Array | None = None) -> Flow:
    """``flow`` (with ``values`` if given) whose rows outside ``keep`` become deletes."""
    column = flow.table.column(VALUE) if values is None else values
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    masked = pc.if_else(pa.array(keep), column, pa.nulls(len(column), column.type))
    return flow.replace(values=masked)


class TableFilterOperator(Operator, node=TableFilterNode):
    """An update whose value fails the predicate forwards a delete (Kafka forwards these
    tombstones whenever its filter cannot know the old value)."""

    node: TableFilterNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return self.transform(flow, context)

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


class _TableGetter:
    """Reads a table by key as of a record's ``_seq``: the source's store and batch changes,
    then the chain of filters and value mappers between the source and the joined table."""

    def __init__(self, store, changes: BatchChanges, chain: Sequence[TableFilterOperator | TableMapValuesOperator]) -> None:
        self.store = store
        self.changes = changes
        self.chain = chain

    def lookup(self, stream: Flow, raw_keys: list[bytes], context: ProcessContext, at: int | None = None) -> tuple[Flow, list[Any], list[int | None]]:
        """The records still standing (the chain may reject some) and, per record, the table's
        value for its key (None: no row) and that row's timestamp: as of the record's turn, or
        as of ``at`` (:data:`AT_START`, :data:`AT_END`) for every record."""
        rows: list[tuple[Any, int] | None] = [None] * len(raw_keys)
        unchanged = []
        for i, (kb, seq) in enumerate(zip(raw_keys, stream.seqs, strict=True)):
            changed, raw = self.changes.as_of(kb, int(seq) if at is None else at)
            if changed:
                rows[i] = _decode(raw)
            else:
                unchanged.append(i)
        for i, raw in zip(unchanged, self.store.get_many([raw_keys[i] for i in unchanged]), strict=True):
            rows[i] = _decode(raw)
        values = [None if r is None else r[0] for r in rows]
        stamps = [None if r is None else r[1] for r in rows]
        if not self.chain:
            return stream, values, stamps
        # Run the chain over the looked-up rows: same _seq (errors point at the looking-up record).
        looked_up, _ = infer_array(values, None)
        table = Flow(
            pa.table(
                [stream.table.column(SEQ), stream.table.column(TIMESTAMP), stream.table.column(KEY), looked_up],
                schema=flow_schema(stream.key_type, looked_up.type, False),
            ),
            False,
            stream.keys(),
            values,
        )
        for operator in self.chain:
            table = operator.transform(table, context)
        if len(table) != len(stream):
            kept = np.isin(stream.seqs, table.seqs)
            stream = stream.filter(kept)
            stamps = [t for t, k in zip(stamps, kept, strict=True) if k]
        values = table.values()
        return stream, values, [t if v is not None else None for t, v in zip(stamps, values, strict=True)]


def _getter(build: BuildContext, table: str, store: str) -> _TableGetter:
    _, chain = _table_chain(build, table)
    operators = [Operator.for_node(build.topology.nodes[n], build.topology.parents[n], build) for n in chain]
    return _TableGetter(build.stores[store], build.table_changes.setdefault(store, BatchChanges()), operators)


def _table_chain(build: BuildContext, table: str) -> tuple[TableSourceNode, list[str]]:
    """The source under ``table`` and the filter/map_values nodes from it up to ``table``."""
    nodes, parents = build.topology.nodes, build.topology.parents
    chain, name = [], table
    while not isinstance(nodes[name], TableSourceNode):
        if not isinstance(nodes[name], (TableFilterNode, TableMapValuesNode)):
            raise TopologyError(f"{table}: only tables from builder.table() or to_table(), filtered or mapped, can be joined", node=table)
        chain.append(name)
        (name,) = parents[name]
    return nodes[name], list(reversed(chain))


class StreamTableJoinOperator(Operator, node=StreamTableJoinNode):
    """Kafka's KStreamKTableJoin: a stream record with a null value is skipped and counted as
    dropped; with a null key it goes to the dead-letter topic in an inner join (Kafka drops it)
    and joins no row in a left join (Kafka 3.7+). The output keeps the stream record's key and
    timestamp."""

    node: StreamTableJoinNode

    def __init__(self, node: StreamTableJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.getter = _getter(build, node.table, node.store)

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
            raw_keys = key_bytes(with_key.table.column(KEY))
            with_key, found, _ = self.getter.lookup(with_key, raw_keys, context)
            if len(with_key) != len(keyed):  # the table's chain rejected some stream records
                kept = np.isin(flow.seqs, with_key.seqs) | null_keys
                flow, null_keys = flow.filter(kept), null_keys[kept]
                keyed = np.flatnonzero(~null_keys)
            for i, value in zip(keyed, found, strict=True):
                table_values[i] = value
        if not self.node.left:
            matched = np.fromiter((v is not None for v in table_values), dtype=bool, count=len(table_values))
            flow = flow.filter(matched)
            table_values = [v for v in table_values if v is not None]
        return self._join(flow, table_values, context)

    def _join(self, flow: Flow, table_values: list[Any], context: ProcessContext) -> Flow:
        joiner = self.node.joiner
        keys, values, seqs = flow.keys(), flow.values(), flow.seqs
        results: list[Any] = [None] * len(flow)
        ok = np.ones(len(flow), dtype=bool)
        for i, (k, v, t) in enumerate(zip(keys, values, table_values, strict=True)):
            try:
                results[i] = joiner.fn(k, v, t) if joiner.takes_key else joiner.fn(v, t)
            except Exception as e:  # noqa: BLE001 - a failing joiner rejects its record, not the batch
                ok[i] = False
                context.bad.reject(seqs[i], self.name, f"{joiner.describe()} raised {type(e).__name__}: {e}", k, v, error=e)
        array, fits = _typed(self.name, results, None, flow, context.bad, "value")
        out = flow.replace(values=array)
        out._keys, out._values = flow._keys, results
        ok &= fits
        return out if ok.all() else out.filter(ok)


class TableTableJoinOperator(Operator, node=TableTableJoinNode):
    """One side of Kafka's table-table join (KTableKTableInnerJoin / LeftJoin / RightJoin /
    OuterJoin, without old values, as Kafka runs them when nothing downstream asks for old
    values): an update of this side looks up the other table as of its turn and forwards the
    joined row, or a delete; the result's timestamp is the larger of the two rows'."""

    node: TableTableJoinNode

    def __init__(self, node: TableTableJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.getter = _getter(build, node.other, node.store)
        # With caching, Kafka forwards a table's updates when its cache flushes at commit, so a
        # table-table join sees both tables as they stand at the end of the batch, and an
        # update's old value is the row from before the batch. Without, record by record.
        self.caching = build.caching
        # Kafka makes both sides send old values: an update's old value is this table as of
        # just before the update, read the way the other side reads it.
        (this_table,) = parents
        source, _ = _table_chain(build, this_table)
        self.own = _getter(build, this_table, source.store)

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
        flow, others, other_stamps = self.getter.lookup(flow, key_bytes(flow.table.column(KEY)), context, AT_END if self.caching else None)
        if self.node.kind is JoinKind.INNER or (self.node.kind is JoinKind.LEFT and not self.node.this_is_left):
            olds: list[Any] = [None] * len(flow)
        else:
            own, olds, _ = self.own.lookup(flow, key_bytes(flow.table.column(KEY)), context, AT_START if self.caching else None)
            if len(own) != len(flow):
                kept = np.isin(flow.seqs, own.seqs)
                flow = flow.filter(kept)
                others = [o for o, k in zip(others, kept, strict=True) if k]
                other_stamps = [t for t, k in zip(other_stamps, kept, strict=True) if k]
        joiner, this_is_left = self.node.joiner, self.node.this_is_left
        keys, news, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        rows, values, times = [], [], []
        for i, (key, new, old, other, other_ts) in enumerate(zip(keys, news, olds, others, other_stamps, strict=True)):
            forward, call = self._joined(new, old, other)
            if not forward:
                continue
            value = None
            if call:
                left_value, right_value = (new, other) if this_is_left else (other, new)
                try:
                    value = joiner.fn(key, left_value, right_value) if joiner.takes_key else joiner.fn(left_value, right_value)
                except Exception as e:  # noqa: BLE001 - a failing joiner rejects its update, not the batch
                    context.bad.reject(seqs[i], self.name, f"{joiner.describe()} raised {type(e).__name__}: {e}", key, new, error=e)
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


NEW, OLD = "new", "old"
"""Fields of a change pair on its way through the repartition topic."""


def _change_pairs(news: list[Any], olds: list[Any]) -> pa.StructArray:
    """``{new, old}`` pairs with one value type for both fields, whatever is missing."""
    typed, _ = infer_array([v for v in news + olds if v is not None], None)
    both = pa.array(news + olds, typed.type) if len(typed) else pa.nulls(len(news) * 2)
    return pa.StructArray.from_arrays([both.slice(0, len(news)), both.slice(len(news))], names=[NEW, OLD])


class TableSelectOperator(Operator, node=TableSelectNode):
    """Kafka's KTableRepartitionMap: an update from ``old`` to ``new`` becomes the pair
    ``(selector(key, old) -> remove)`` and ``(selector(key, new) -> add)``, one record
    ``{new, old}`` when both land on the same key. A pair with a null value is skipped, as in
    Kafka; a new pair with a null key goes to the dead-letter topic (Kafka skips it too)."""

    node: TableSelectNode

    def __init__(self, node: TableSelectNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        (this_table,) = parents
        source, _ = _table_chain(build, this_table)
        self.own = _getter(build, this_table, source.store)
        self.caching = build.caching

    def _select(self, key: Any, value: Any, seq: int, context: ProcessContext, report: bool) -> tuple[Any, Any] | None:
        selector = self.node.selector
        try:
            pair = selector.fn(key, value)
            new_key, new_value = pair
        except Exception as e:  # noqa: BLE001 - a failing selector rejects its update, not the batch
            if report:
                context.bad.reject(seq, self.name, f"{selector.describe()} must return (key, value): {type(e).__name__}: {e}", key, value, error=e)
            return None
        if new_key is None:
            if report:
                context.bad.reject(seq, self.name, "null key: group_by's selector returned no key (Kafka drops these)", key, value)
            return None
        return (new_key, new_value) if new_value is not None else None

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        if not len(flow):
            return _changes_flow(flow, [], [], [], [])
        raw_keys = key_bytes(flow.table.column(KEY))
        own, olds, _ = self.own.lookup(flow, raw_keys, context, AT_START if self.caching else None)
        if len(own) != len(flow):
            kept = np.isin(flow.seqs, own.seqs)
            flow = flow.filter(kept)
        rows, keys, news, old_values = [], [], [], []
        for i, (key, new, old, seq) in enumerate(zip(flow.keys(), flow.values(), olds, flow.seqs, strict=True)):
            new_pair = self._select(key, new, seq, context, report=True) if new is not None else None
            old_pair = self._select(key, old, seq, context, report=False) if old is not None else None
            if new_pair is not None and old_pair is not None and new_pair[0] == old_pair[0]:
                rows.append(i), keys.append(new_pair[0]), news.append(new_pair[1]), old_values.append(old_pair[1])
                continue
            if old_pair is not None:  # the subtraction first, as Kafka forwards it
                rows.append(i), keys.append(old_pair[0]), news.append(None), old_values.append(old_pair[1])
            if new_pair is not None:
                rows.append(i), keys.append(new_pair[0]), news.append(new_pair[1]), old_values.append(None)
        return _changes_flow(flow, rows, keys, news, old_values)


def _changes_flow(flow: Flow, rows: list[int], keys: list[Any], news: list[Any], olds: list[Any]) -> Flow:
    taken = flow.take(np.asarray(rows, dtype=np.int64))
    key_array, _ = infer_array(keys, None)
    values = _change_pairs(news, olds)
    table = pa.table(
        [taken.table.column(SEQ), taken.table.column(TIMESTAMP), key_array, values],
        schema=flow_schema(key_array.type, values.type, False),
    )
    return Flow(table, False, keys, [{NEW: n, OLD: o} for n, o in zip(news, olds, strict=True)])


class TableAggregateOperator(Operator, node=TableAggregateNode):
    """Kafka's KTableAggregate / KTableReduce over change pairs: subtract the old value (if the
    group has an aggregate), then add the new one (from ``initializer()`` or, for ``reduce``,
    the value itself, when the group has none). The result's timestamp is the record's, or the
    larger of it and the aggregate's when the aggregate existed. A ``None`` aggregate deletes the
    group's row. With caching, the last update per group of a batch is emitted."""

    node: TableAggregateNode

    def __init__(self, node: TableAggregateNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.store = build.stores[node.store]
        self.caching = build.caching

    def store_view(self) -> _TableView | None:
        return _TableView(self.node.store, self.store) if self.store is not None else None

    def _fold(self, key: Any, new: Any, old: Any, aggregate: Any) -> Any:
        kind, add, subtract = self.node.aggregation.kind, self.node.aggregation.function, self.node.subtractor
        if old is not None and aggregate is not None:
            if kind is AggregationKind.COUNT:
                aggregate = aggregate - 1
            elif kind is AggregationKind.REDUCE:
                aggregate = subtract(aggregate, old)
            else:
                aggregate = subtract(key, old, aggregate)
        if new is None:
            return aggregate
        if kind is AggregationKind.COUNT:
            return (0 if aggregate is None else aggregate) + 1
        if kind is AggregationKind.REDUCE:
            return new if aggregate is None else add(aggregate, new)
        return add(key, new, self.node.aggregation.initializer() if aggregate is None else aggregate)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        keys, pairs, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        raw_keys = key_bytes(flow.table.column(KEY)) if len(flow) else []
        rows, values, times = [], [], []
        last: dict[bytes, int] = {}
        for i, (key, kb, pair) in enumerate(zip(keys, raw_keys, pairs, strict=True)):
            stored = _decode(self.store.get(kb))
            aggregate, aggregate_ts = (None, None) if stored is None else stored
            try:
                result = self._fold(key, pair[NEW], pair[OLD], aggregate)
            except Exception as e:  # noqa: BLE001 - a failing adder or subtractor rejects its record
                context.bad.reject(seqs[i], self.name, f"{type(e).__name__}: {e}", key, pair)
                continue
            ts = int(stamps[i]) if aggregate_ts is None else max(int(stamps[i]), aggregate_ts)
            if result is None:
                self.store.delete(kb)
            else:
                self.store.put(kb, _encode(result, ts))
            last.pop(kb, None)
            last[kb] = len(rows)
            rows.append(i), values.append(result), times.append(ts)
        if self.caching:
            keep = list(last.values())
            rows, values, times = [rows[j] for j in keep], [values[j] for j in keep], [times[j] for j in keep]
        out = flow.take(np.asarray(rows, dtype=np.int64))
        array, fits = _typed(self.name, values, pa.int64() if self.node.aggregation.kind is AggregationKind.COUNT else None, out, context.bad, "value")
        table = out.table.set_column(out.table.schema.get_field_index(TIMESTAMP), TIMESTAMP, pa.array(times, pa.int64()))
        table = table.set_column(table.schema.get_field_index(VALUE), VALUE, array)
        result = Flow(table, False, [keys[i] for i in rows], values)
        return result if fits.all() else result.filter(fits)

