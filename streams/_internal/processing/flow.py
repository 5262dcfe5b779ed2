"""The batch of records moving between a task's operators, and where bad records go.

A :class:`Flow` is an Arrow table with ``_seq`` (index of the input record it came from, so a bad
record can be traced to its topic, partition and offset, and so outputs of several branches merge
back in input order), ``timestamp``, the window columns for windowed keys, ``key`` and ``value``;
once records of one input record fork, ``_walk`` orders them among themselves
(:mod:`deltastreams.streams._internal.processing.walk`), and operators that rebuild a flow carry it.
Python callables see plain Python keys and values; the lists are converted once and carried along
while consecutive Python operators run, so a fused chain pays the conversion once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf.errors import ProcessingError, RecordError
from deltastreams.sinks.serde import json_default
from deltastreams.topology.records import HEADERS, KEY, TIMESTAMP, VALUE, WINDOW_END, WINDOW_START, Windowed, headers_array

SEQ = "_seq"
WALK = "_walk"
"""Where a record stands in the depth-first walk of its input record (see
:mod:`deltastreams.streams._internal.processing.walk`); absent until records of one input record fork."""


def flow_schema(key_type: pa.DataType, value_type: pa.DataType, windowed: bool) -> pa.Schema:
    fields = [pa.field(SEQ, pa.int64()), pa.field(TIMESTAMP, pa.int64())]
    if windowed:
        fields += [pa.field(WINDOW_START, pa.int64()), pa.field(WINDOW_END, pa.int64())]
    return pa.schema(fields + [pa.field(KEY, key_type), pa.field(VALUE, value_type)])


@dataclass
class Flow:
    table: pa.Table
    windowed: bool = False
    _keys: list[Any] | None = field(default=None, repr=False)
    _values: list[Any] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return self.table.num_rows

    @classmethod
    def empty(cls, key_type: pa.DataType = pa.null(), value_type: pa.DataType = pa.null(), windowed: bool = False) -> Flow:
        return cls(flow_schema(key_type, value_type, windowed).empty_table(), windowed)

    @property
    def key_type(self) -> pa.DataType:
        return self.table.schema.field(KEY).type

    @property
    def value_type(self) -> pa.DataType:
        return self.table.schema.field(VALUE).type

    def column(self, name: str) -> np.ndarray:
        return self.table.column(name).to_numpy()

    @property
    def seqs(self) -> np.ndarray:
        return self.column(SEQ)

    @property
    def timestamps(self) -> np.ndarray:
        return self.column(TIMESTAMP)

    def keys(self) -> list[Any]:
        """Keys as Python objects; :class:`Windowed` for windowed keys."""
        if self._keys is None:
            raw = self.table.column(KEY).to_pylist()
            if self.windowed:
                starts = self.table.column(WINDOW_START).to_pylist()
                ends = self.table.column(WINDOW_END).to_pylist()
                raw = [Windowed(k, s, e) for k, s, e in zip(raw, starts, ends, strict=True)]
            self._keys = raw
        return self._keys

    def values(self) -> list[Any]:
        if self._values is None:
            self._values = self.table.column(VALUE).to_pylist()
        return self._values

    def take(self, indices: Sequence[int] | np.ndarray) -> Flow:
        idx = np.asarray(indices, dtype=np.int64)
        keys = [self._keys[i] for i in idx] if self._keys is not None else None
        values = [self._values[i] for i in idx] if self._values is not None else None
        return Flow(self.table.take(pa.array(idx)), self.windowed, keys, values)

    def filter(self, mask: np.ndarray) -> Flow:
        return self.take(np.flatnonzero(mask))

    def replace(self, *, keys: pa.Array | None = None, values: pa.Array | None = None) -> Flow:
        table = self.table
        if keys is not None:
            table = table.set_column(table.schema.get_field_index(KEY), KEY, keys)
        if values is not None:
            table = table.set_column(table.schema.get_field_index(VALUE), VALUE, values)
        return Flow(table, self.windowed)


def concat_flows(flows: Sequence[Flow]) -> Flow:
    """Concatenate, in ``_seq`` order (stable), the outputs of several branches; records of one
    input record in the order of its walk, where they forked."""
    nonempty = [f for f in flows if len(f)]
    if not nonempty:
        return flows[0] if flows else Flow.empty()  # keep the types, even without records
    flows = nonempty
    if len(flows) == 1:
        return flows[0]
    windowed = flows[0].windowed
    table = pa.concat_tables([f.table for f in flows], promote_options="permissive")
    if WALK in table.column_names:
        keys = pa.table([table.column(SEQ), table.column(WALK).fill_null(b"")], names=["s", "w"])
        order = pc.sort_indices(keys, sort_keys=[("s", "ascending"), ("w", "ascending")])  # stable
    else:
        order = pa.array(np.argsort(table.column(SEQ).to_numpy(), kind="stable"))
    return Flow(table.take(order), windowed)


def headers_by_seqs(by_seq: pa.Array, seqs: np.ndarray) -> pa.Array:
    """The headers of the input records ``seqs`` (a seq outside the batch, as a punctuation's
    before any record: none)."""
    valid = (seqs >= 0) & (seqs < len(by_seq))
    taken = by_seq.take(pa.array(np.where(valid, seqs, 0)))
    return taken if valid.all() else pc.if_else(pa.array(valid), taken, pa.nulls(len(seqs), by_seq.type))


def carry_headers(table: pa.Table, source: pa.Table) -> pa.Table:
    """``table`` (rebuilt row for row from ``source``) with ``source``'s own headers column, if it
    has one: headers a processor or an operator set stay with their records through operators
    that rebuild the flow's columns."""
    if HEADERS not in source.column_names:
        return table
    return table.append_column(HEADERS, source.column(HEADERS))


def own_headers(headers: list[tuple] | None, input_headers: pa.Array | None) -> pa.Array | None:
    """The HEADERS column of records an operator forwards with headers of its own (``headers[i]``,
    empty for none) rather than those of the input record each came from; None when no record has
    any and no input record could lend some (then inheriting gives the same: none)."""
    if headers is None or (input_headers is None and not any(headers)):
        return None
    return headers_array(headers)


def record_headers(flow: Flow, input_headers: pa.Array | None) -> pa.Array | None:
    """Each record's headers, as in Kafka: those a processor gave it (the flow's HEADERS column),
    else those of the input record it came from (its ``_seq``); None when no record has any."""
    headers = flow.table.column(HEADERS).combine_chunks() if HEADERS in flow.table.column_names else None
    if input_headers is not None:
        inherited = headers_by_seqs(input_headers, flow.seqs)
        headers = inherited if headers is None else pc.if_else(headers.is_null(), inherited, headers)
    return headers


def to_json_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Windowed):
        value = value._asdict()
    return json.dumps(value, sort_keys=True, default=json_default)


class BadRecords:
    """Collects records that could not be processed, or raises, as configured."""

    def __init__(self, fail: bool, task: str) -> None:
        self.fail = fail
        self.task = task
        self.seqs: list[int] = []
        self.nodes: list[str] = []
        self.reasons: list[str] = []
        self.keys: list[str | None] = []
        self.values: list[str | None] = []

    def reject(self, seq: int, node: str, reason: str, key: Any = None, value: Any = None, error: BaseException | None = None) -> None:
        if self.fail:
            if error is not None:
                raise ProcessingError(f"{node} failed on a record (task {self.task}): {reason}", node=node, task=self.task) from error
            raise RecordError(f"{node} cannot process a record (task {self.task}): {reason}", node=node)
        self.seqs.append(int(seq))
        self.nodes.append(node)
        self.reasons.append(reason)
        self.keys.append(_safe_json(key))
        self.values.append(_safe_json(value))

    def __len__(self) -> int:
        return len(self.seqs)


def _safe_json(value: Any) -> str | None:
    try:
        return to_json_text(value)
    except (TypeError, ValueError):
        return repr(value)


def infer_array(values: list[Any], hint: pa.DataType | None) -> tuple[pa.Array, list[int]]:
    """Arrow array of Python values, plus the indices that do not fit the inferred type.

    Tries the hint (the type the stream had) first, then inference over all values; if the values
    disagree, the type of the first non-null value wins and the rest are reported as bad.
    """
    if hint is not None and not pa.types.is_null(hint):
        try:
            return pa.array(values, type=hint), []
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            pass
    try:
        return pa.array(values), []
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass
    first = next((v for v in values if v is not None), None)
    target = pa.array([first]).type
    bad: list[int] = []
    converted: list[Any] = []
    for i, value in enumerate(values):
        try:
            pa.array([value], type=target)
            converted.append(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            bad.append(i)
            converted.append(None)
    return pa.array(converted, type=target), bad
