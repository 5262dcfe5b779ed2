"""Stateless operators over a flow: filter, map, map_values, flat_map, select_key, peek, the
null-key filter before a repartition topic, to_stream, and sinks.

User functions are called once per record, in order: that is their contract. A function that
raises, or returns something that does not fit the stream's type, rejects that record (to the
dead-letter topic, or failing the job); the other records go on.
"""

from __future__ import annotations

import sys

from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.streams._internal.processing.flow import SEQ, BadRecords, Flow, carry_headers, flow_schema, infer_array
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.value_formats import encode_values
from deltastreams.streams._internal.processing.walk import carry_walk
from deltastreams.topology.functions import UserFunction
from deltastreams.topology.nodes import (
    FilterNode,
    FlatMapNode,
    FlatMapValuesNode,
    ForeachNode,
    MapNode,
    MapValuesNode,
    NullKeyFilterNode,
    PeekNode,
    PrintNode,
    SelectKeyNode,
    SinkNode,
    ToStreamNode,
)
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE, Windowed


def _describe_error(fn: UserFunction, error: BaseException) -> str:
    return f"{fn.describe()} raised {type(error).__name__}: {error}"


def _call_each(node: str, fn: UserFunction, flow: Flow, bad: BadRecords) -> tuple[list[Any], np.ndarray]:
    """``fn(key, value)`` per record; returns results and a mask of records that did not raise."""
    keys, values, seqs = flow.keys(), flow.values(), flow.seqs
    results: list[Any] = [None] * len(keys)
    ok = np.ones(len(keys), dtype=bool)
    call = fn.fn
    takes_key = fn.takes_key
    for i, (k, v) in enumerate(zip(keys, values, strict=True)):
        try:
            results[i] = call(k, v) if takes_key else call(v)
        except Exception as e:  # noqa: BLE001 - any user error rejects the record, not the batch
            ok[i] = False
            bad.reject(seqs[i], node, _describe_error(fn, e), k, v, error=e)
    return results, ok


def _expression_input(flow: Flow) -> pa.Table:
    return flow.table.drop_columns([SEQ])


def _project(table: pa.Table, expressions: list) -> list[pa.ChunkedArray]:
    # Imported here, not at the top: acero brings pyarrow.dataset and pandas (~0.3 s), and the
    # driver imports this module without ever projecting; the host factory imports it once for
    # every host it forks (task_host.factory).
    from pyarrow import acero

    names = [f"_{i}" for i in range(len(expressions))]
    plan = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration("project", acero.ProjectNodeOptions(expressions, names)),
        ]
    )
    result = plan.to_table(use_threads=False)  # one thread keeps the records' order
    return [result.column(name) for name in names]


def _evaluate(node: str, fn: UserFunction, flow: Flow, bad: BadRecords) -> tuple[list[pa.ChunkedArray], Flow]:
    """Evaluate pyarrow expression(s) over the whole flow at once. If the batch fails (a cast,
    an overflow), find the records that fail one by one and reject just those."""
    expressions = list(fn.fn) if isinstance(fn.fn, tuple) else [fn.fn]
    try:
        return _project(_expression_input(flow), expressions), flow
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as batch_error:
        if len(flow) == 0:
            raise
        keep = np.ones(len(flow), dtype=bool)
        table = _expression_input(flow)
        seqs = flow.seqs
        for i in range(len(flow)):
            try:
                _project(table.slice(i, 1), expressions)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                keep[i] = False
                bad.reject(seqs[i], node, f"{fn.describe()} failed: {e}", flow.keys()[i], flow.values()[i], error=e)
        if keep.all():
            raise batch_error
        flow = flow.filter(keep)
        return _project(_expression_input(flow), expressions), flow


class FilterOperator(Operator, node=FilterNode):
    node: FilterNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        predicate, negate, bad = self.node.predicate, self.node.negate, context.bad
        if predicate.is_arrow:
            (mask,), flow = _evaluate(self.name, predicate, flow, bad)
            mask = mask.combine_chunks()
            unknown = np.asarray(mask.is_null())
            if unknown.any():  # a null predicate (a missing field) is a bad record, not a "no"
                seqs = flow.seqs
                for i in np.flatnonzero(unknown):
                    bad.reject(seqs[i], self.name, f"{predicate.describe()} is null for this record (a missing field?)", flow.keys()[i], flow.values()[i])
            keep = (np.asarray(mask.fill_null(negate)) != negate) & ~unknown
            return flow.filter(keep)
        results, ok = _call_each(self.name, predicate, flow, bad)
        keep = np.fromiter((bool(r) != negate for r in results), dtype=bool, count=len(results)) & ok
        return flow.filter(keep)


class NullKeyFilterOperator(Operator, node=NullKeyFilterNode):
    node: NullKeyFilterNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        keys = flow.table.column(KEY)
        if keys.null_count == 0 or self.node.relaxed:
            return flow
        null = np.asarray(keys.is_null())
        seqs, values = flow.seqs, flow.values()
        for i in np.flatnonzero(null):
            context.bad.reject(seqs[i], self.name, "null key: a record needs a key to be repartitioned (Kafka drops these)", None, values[i])
        return flow.filter(~null)


class PeekOperator(Operator, node=PeekNode):
    node: PeekNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        _, ok = _call_each(self.name, self.node.action, flow, context.bad)
        return flow if ok.all() else flow.filter(ok)


class ToStreamOperator(Operator, node=ToStreamNode):
    """A table's revisions as a stream: the records are already revisions."""

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return flow


class SinkOperator(Operator, node=SinkNode):
    node: SinkNode

    def __init__(self, node: SinkNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.rank = build.ranks.get(node.name, 0)

    @property
    def emits(self) -> tuple[str, ...]:
        return self.node.topics

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        # Emitted even when empty: the typed empty table tells the runtime the topic's schema.
        if self.node.extractor is None:
            context.emit(self.node.topic, self._encoded(flow, context), self.rank)
            return flow
        names, ok = _call_each(self.name, self.node.extractor, flow, context.bad)
        declared = self.node.extracted_topics
        for i in np.flatnonzero(ok):
            if names[i] not in declared:
                ok[i] = False
                context.bad.reject(
                    flow.seqs[i], self.name, f"the topic extractor chose {names[i]!r}, not one of the declared topics {list(declared)}", flow.keys()[i], flow.values()[i]
                )
        chosen = np.array([n if k else "" for n, k in zip(names, ok, strict=True)], dtype=object)
        for topic in declared:
            context.emit(topic, self._encoded(flow.filter(chosen == topic), context), self.rank)
        return flow

    def _encoded(self, flow: Flow, context: ProcessContext) -> Flow:
        """The records as the topic holds them: with a value format, values as its bytes (the
        topic extractor above saw them decoded, as Kafka's does before the serializer)."""
        if self.node.value_format is None:
            return flow
        return encode_values(self.name, flow, self.node.value_format, context.bad)


def _typed(node: str, values: list[Any], hint: pa.DataType | None, flow: Flow, bad: BadRecords, what: str) -> tuple[pa.Array, np.ndarray]:
    array, misfits = infer_array(values, hint)
    ok = np.ones(len(values), dtype=bool)
    if misfits:
        seqs = flow.seqs
        for i in misfits:
            ok[i] = False
            bad.reject(seqs[i], node, f"{what} {values[i]!r} does not fit the stream's {what} type {array.type}", None, values[i])
    return array, ok


class MapValuesOperator(Operator, node=MapValuesNode):
    node: MapValuesNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        mapper, bad = self.node.mapper, context.bad
        if mapper.is_arrow:
            (values,), flow = _evaluate(self.name, mapper, flow, bad)
            return flow.replace(values=values)
        results, ok = _call_each(self.name, mapper, flow, bad)
        values, fits = _typed(self.name, results, None, flow, bad, "value")
        ok &= fits
        out = flow.replace(values=values)
        out._keys, out._values = flow._keys, results
        return out if ok.all() else out.filter(ok)


def _unwindow(keys: list[Any]) -> tuple[list[Any], list[int] | None, list[int] | None]:
    """New keys that are all :class:`Windowed` keep the stream windowed."""
    if keys and all(isinstance(k, Windowed) for k in keys):
        return [k.key for k in keys], [k.window_start for k in keys], [k.window_end for k in keys]
    return keys, None, None


def _rebuild(node: str, flow: Flow, rows: np.ndarray, new_keys: list[Any], new_values: list[Any] | None, bad: BadRecords) -> Flow:
    """A flow whose record i comes from input record ``rows[i]`` with a new key (and value)."""
    child = flow.take(rows) if len(rows) != len(flow) or not np.array_equal(rows, np.arange(len(flow))) else flow
    plain_keys, starts, ends = _unwindow(new_keys)
    keys, ok = _typed(node, plain_keys, None, child, bad, "key")
    if new_values is None:
        values_array = child.table.column(VALUE).combine_chunks()
        values_py = child._values
    else:
        values_array, fits = _typed(node, new_values, None, child, bad, "value")
        ok &= fits
        values_py = new_values
    windowed = starts is not None
    columns = [child.table.column(SEQ), child.table.column(TIMESTAMP)]
    if windowed:
        columns += [pa.array(starts, pa.int64()), pa.array(ends, pa.int64())]
    table = pa.table(columns + [keys, values_array], schema=flow_schema(keys.type, values_array.type, windowed))
    out = Flow(carry_walk(carry_headers(table, child.table), child.table), windowed, None, values_py)
    return out if ok.all() else out.filter(ok)


def _rekeyed(flow: Flow, keys: pa.ChunkedArray, values: pa.ChunkedArray | None = None) -> Flow:
    """The flow with new keys (and values): window columns no longer apply."""
    value_column = flow.table.column(VALUE) if values is None else values
    columns = [flow.table.column(SEQ), flow.table.column(TIMESTAMP), keys, value_column]
    table = pa.table(columns, schema=flow_schema(keys.type, value_column.type, False))
    return Flow(carry_walk(carry_headers(table, flow.table), flow.table), False)


class SelectKeyOperator(Operator, node=SelectKeyNode):
    node: SelectKeyNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        mapper, bad = self.node.mapper, context.bad
        if mapper.is_arrow:
            (keys,), flow = _evaluate(self.name, mapper, flow, bad)
            return _rekeyed(flow, keys)
        results, ok = _call_each(self.name, mapper, flow, bad)
        rows = np.flatnonzero(ok)
        return _rebuild(self.name, flow, rows, [results[i] for i in rows], None, bad)


def _pairs(node: str, fn: UserFunction, produced: Any, seq: int, bad: BadRecords, key: Any, value: Any) -> list[tuple[Any, Any]] | None:
    try:
        pairs = [(k, v) for k, v in produced]
    except (TypeError, ValueError) as e:
        bad.reject(seq, node, f"{fn.describe()} must return (key, value) pairs, got {produced!r}", key, value, error=e)
        return None
    return pairs


class MapOperator(Operator, node=MapNode):
    node: MapNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        mapper, bad = self.node.mapper, context.bad
        if mapper.is_arrow:
            (keys, values), flow = _evaluate(self.name, mapper, flow, bad)
            return _rekeyed(flow, keys, values)
        results, ok = _call_each(self.name, mapper, flow, bad)
        seqs, keys, values = flow.seqs, flow.keys(), flow.values()
        rows, new_keys, new_values = [], [], []
        for i in np.flatnonzero(ok):
            pair = _pairs(self.name, mapper, [results[i]], seqs[i], bad, keys[i], values[i])
            if pair is not None:
                rows.append(i)
                new_keys.append(pair[0][0])
                new_values.append(pair[0][1])
        return _rebuild(self.name, flow, np.asarray(rows, dtype=np.int64), new_keys, new_values, bad)


class FlatMapOperator(Operator, node=FlatMapNode):
    node: FlatMapNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        mapper, bad = self.node.mapper, context.bad
        results, ok = _call_each(self.name, mapper, flow, bad)
        seqs, keys, values = flow.seqs, flow.keys(), flow.values()
        rows, new_keys, new_values = [], [], []
        for i in np.flatnonzero(ok):
            pairs = _pairs(self.name, mapper, results[i] if results[i] is not None else (), seqs[i], bad, keys[i], values[i])
            for k, v in pairs or ():
                rows.append(i)
                new_keys.append(k)
                new_values.append(v)
        return _rebuild(self.name, flow, np.asarray(rows, dtype=np.int64), new_keys, new_values, bad)


class FlatMapValuesOperator(Operator, node=FlatMapValuesNode):
    """Zero or more values per record, each keeping the record's key (and window)."""

    node: FlatMapValuesNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        mapper, bad = self.node.mapper, context.bad
        results, ok = _call_each(self.name, mapper, flow, bad)
        seqs, keys, values = flow.seqs, flow.keys(), flow.values()
        rows, new_values = [], []
        for i in np.flatnonzero(ok):
            try:
                produced = list(results[i] if results[i] is not None else ())
            except TypeError as e:
                bad.reject(seqs[i], self.name, f"{mapper.describe()} must return an iterable of values, got {results[i]!r}", keys[i], values[i], error=e)
                continue
            rows += [i] * len(produced)
            new_values += produced
        child = flow.take(np.asarray(rows, dtype=np.int64))
        array, fits = _typed(self.name, new_values, None, child, bad, "value")
        out = child.replace(values=array)
        out._keys, out._values = child._keys, new_values
        return out if fits.all() else out.filter(fits)


class ForeachOperator(Operator, node=ForeachNode):
    """Calls the action per record, in order; forwards nothing (a terminal step)."""

    node: ForeachNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        _call_each(self.name, self.node.action, flow, context.bad)
        return flow.take(np.zeros(0, dtype=np.int64))


def _java_text(value: Any) -> str:
    return "null" if value is None else str(value)


class PrintOperator(Operator, node=PrintNode):
    """Kafka's KStreamPrint: ``[label]: key, value`` (or ``[label]: mapper(key, value)``) per record,
    flushed per batch."""

    node: PrintNode

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        if not len(flow):
            return flow
        mapper = self.node.mapper
        if mapper is None:
            texts, ok = [f"{_java_text(k)}, {_java_text(v)}" for k, v in zip(flow.keys(), flow.values(), strict=True)], None
        else:
            texts, ok = _call_each(self.name, mapper, flow, context.bad)
        lines = "".join(f"[{self.node.label}]: {_java_text(t)}\n" for i, t in enumerate(texts) if ok is None or ok[i])
        if self.node.path is None:
            sys.stdout.write(lines)
            sys.stdout.flush()
        else:
            with open(self.node.path, "a", encoding="utf-8") as out:
                out.write(lines)
        return flow.take(np.zeros(0, dtype=np.int64))
