"""Re-grouping a table: Kafka's KTableRepartitionMap (``KTable.group_by``) and KTableAggregate /
KTableReduce (``KGroupedTable.count / reduce / aggregate``).

A row that changes leaves its old group and joins its new one: the select step turns each
update into change pairs ``{new, old}`` keyed by the grouping key, which cross a repartition
topic; the aggregation subtracts the old value and adds the new one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.sinks.serde import key_bytes
from deltastreams.streams._internal.processing.flow import SEQ, Flow, flow_schema, infer_array
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.stateless import _typed
from deltastreams.streams._internal.processing.table import TableView, decode_row, encode_row, row_keys, table_chain, table_getter
from deltastreams.streams._internal.processing.walk import AT_START, carry_walk, turns
from deltastreams.topology.nodes import AggregationKind, TableAggregateNode, TableSelectNode
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE

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
        source, _ = table_chain(build, this_table)
        self.own = table_getter(build, this_table, source.store)
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
        own = self.own.lookup(flow, row_keys(flow), context, AT_START if self.caching else None)
        olds = own.values
        if not own.kept.all():  # the table's chain rejected some updates
            flow, olds = flow.filter(own.kept), own.select(olds)
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
    # Updates keep their walks, as every operator's output does: the task then numbers the
    # subtraction and the addition of each as a fork of its own update.
    return Flow(carry_walk(table, taken.table), False, keys, [{NEW: n, OLD: o} for n, o in zip(news, olds, strict=True)])


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
        self.table_changes = build.table_changes
        self.rank = build.ranks.get(node.name, 0)

    def store_view(self) -> TableView | None:
        return TableView(self.node.store, self.store) if self.store is not None else None

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
        changes = self.table_changes.get(self.node.store)  # something reads this table by key
        if changes is not None:
            changes.clear()
        keys, pairs, stamps, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        at = turns(flow, self.rank) if changes is not None else None
        raw_keys = key_bytes(flow.table.column(KEY)) if len(flow) else []
        distinct = list(dict.fromkeys(raw_keys))
        before = dict(zip(distinct, self.store.get_many(distinct), strict=True))  # one read for the batch
        current = {kb: decode_row(raw) for kb, raw in before.items()}
        rows, values, times = [], [], []
        last: dict[bytes, int] = {}
        for i, (key, kb, pair) in enumerate(zip(keys, raw_keys, pairs, strict=True)):
            stored = current[kb]
            aggregate, aggregate_ts = (None, None) if stored is None else stored
            try:
                result = self._fold(key, pair[NEW], pair[OLD], aggregate)
            except Exception as e:  # noqa: BLE001 - a failing adder or subtractor rejects its record
                context.bad.reject(seqs[i], self.name, f"{type(e).__name__}: {e}", key, pair)
                continue
            ts = int(stamps[i]) if aggregate_ts is None else max(int(stamps[i]), aggregate_ts)
            encoded = None if result is None else encode_row(result, ts)
            if encoded is None:
                self.store.delete(kb)
                current[kb] = None
            else:
                self.store.put(kb, encoded)
                current[kb] = (result, ts)
            if changes is not None:
                changes.record(kb, before[kb], at[i], encoded)
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
