"""Idle close: wall-clock completeness for a task whose input has gone quiet (beyond Kafka).

Kafka's stream time moves only with records, so the last window of a partition that stops
receiving records never closes: its final result (emit-final, ``suppress``) waits for the next
record, maybe forever. With ``idle_close_ms`` set, the runtime runs an idle task on no records
with an *idle advance*: every operator that keeps stream time moves it by the wall-clock time
elapsed since the task last moved it (its last record, or its last idle advance), as if records
had kept arriving in real time, and emits what that closes, exactly as a record that far ahead
would have made it do. Everything an advance changes (stream times, emission marks, buffers) is
store state: changelogged and committed with the emitted records in one batch, so a crash
before the commit loses the advance and its results together, and a replay decides afresh.

The core only says how much stream time must still pass before something closes
(:func:`next_close_ms`); *when* to run an idle task is the runtime's decision
(:mod:`deltastreams.streams._internal.runtime.idle`).

Operators taking part implement :meth:`Operator.next_close_ms` and :meth:`Operator.advance_idle`:
windowed aggregations (emit-final or not: a later record for a closed window is late), session
aggregations, ``suppress`` (both kinds), and sliding aggregations (emit-final or not). All of them move by the same amount, so the invariant Kafka relies on holds:
a ``suppress`` never runs ahead of the aggregation feeding it, and no revision of a window it has
emitted can reach it later.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from deltastreams.state.session_store import NO_TIME
from deltastreams.streams._internal.processing.operator import IDLE_BLOCKED, Operator

_KEY_TYPE_KEY = b"\xff\xffkey-type"


def next_close_ms(operators: Iterable[Operator]) -> int | None:
    """The least stream time any operator needs before it closes something; None if nothing is
    open or some operator cannot close anything yet (:data:`IDLE_BLOCKED`)."""
    due = [operator.next_close_ms() for operator in operators]
    if IDLE_BLOCKED in due:
        return None
    return min((d for d in due if d is not None), default=None)


def remember_key_type(store, key_type: pa.DataType) -> None:
    """Keep the Arrow type of an operator's keys in its store (``store``: a changelogging
    key-value store), so an idle advance can turn stored key bytes back into keys without a
    record to take the type from. Written only when it changes."""
    if pa.types.is_null(key_type):
        return
    raw = pa.schema([pa.field("key", key_type)]).serialize().to_pybytes()
    if store.get(_KEY_TYPE_KEY) != raw:
        store.put(_KEY_TYPE_KEY, raw)


def remembered_key_type(store) -> pa.DataType | None:
    raw = store.get(_KEY_TYPE_KEY)
    return None if raw is None else pa.ipc.read_schema(pa.py_buffer(raw)).field("key").type


def advance_windows_store(store, by_ms: int, context, emit_final: bool) -> pa.DataType | None:
    """The common start of a session or sliding aggregation's idle advance over its
    :class:`~deltastreams.state.session_store.SessionStore`: stream time moves on by ``by_ms`` (if it has one).
    Returns the keys' type when final results are due to be emitted (the store's batch stays
    open for that); None when there is nothing more to do (the batch is ended)."""
    store.begin_batch()
    if store.stream_time == NO_TIME:
        return None
    store.stream_time += by_ms
    context.advanced_to(store.stream_time)
    key_type = remembered_key_type(store.store)
    if not emit_final or key_type is None:  # (unknown: next_close_ms blocks idle runs while windows are open)
        store.end_batch()
        return None
    return key_type
