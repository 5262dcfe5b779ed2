"""Foreign-key table joins: Kafka's SubscriptionSend, SubscriptionReceive, SubscriptionJoin,
ForeignTableJoin and ResponseJoin processors (see :mod:`deltastreams.topology.foreign_key_nodes`
for how they connect).

Records on the two internal topics:

- subscription: key = foreign key; value ``{pk, hash, op}``: the left row's key, a hash of its
  new value (None for a delete) and the :class:`Instruction`;
- response: key = primary key; value ``{hash, fv}``: the subscription's hash, and the foreign
  value pickled (any Python value, so the topic's type does not depend on the first batch's
  values being present).

The subscription store keeps ``(pk, hash, op, timestamp)`` under ``len(fk) | fk | pk`` (the
serialized keys), so a right-row update finds its subscribers by prefix. Its changes are logged by
turn, as a table source's are, so a right-row update of a batch sees the subscriptions that
existed at its turn (record-at-a-time, as Kafka processes them).
"""

from __future__ import annotations

import hashlib
import pickle
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.sinks.serde import key_bytes
from deltastreams.streams._internal.processing.flow import SEQ, Flow, flow_schema, infer_array
from deltastreams.streams._internal.processing.operator import BuildContext, Operator, ProcessContext
from deltastreams.streams._internal.processing.table import BatchChanges, table_chain, table_getter
from deltastreams.streams._internal.processing.walk import AT_END, AT_START, carry_walk, turns
from deltastreams.topology.foreign_key_nodes import (
    ForeignTableJoinNode,
    Instruction,
    ResponseJoinNode,
    SubscriptionJoinNode,
    SubscriptionReceiveNode,
    SubscriptionSendNode,
)
from deltastreams.topology.records import KEY, TIMESTAMP, VALUE

PK, HASH, OP, FOREIGN_VALUE = "pk", "hash", "op", "fv"
_NO_ANSWER = {HASH: None, FOREIGN_VALUE: None}


def value_hash(value: Any) -> bytes | None:
    """Kafka's Murmur3 hash of the serialized left value: what tells a response to the current
    left value from one to a superseded value. ``repr`` is canonical for the values a table
    holds (it does not depend on object identity, as pickle's memo does)."""
    return None if value is None else hashlib.blake2b(repr(value).encode(), digest_size=16).digest()


def combined_prefix(fk_bytes: bytes) -> bytes:
    return struct.pack(">I", len(fk_bytes)) + fk_bytes


def _records(source: Flow, rows: list[int], keys: list[Any], key_type: pa.DataType | None, values: pa.StructArray, stamps: list[int]) -> Flow:
    """A flow of ``rows`` of ``source`` (their ``_seq`` and walks), with new keys, values and timestamps."""
    taken = source.take(np.asarray(rows, dtype=np.int64))
    key_array, _ = infer_array(keys, key_type)
    table = pa.table(
        [taken.table.column(SEQ), pa.array(stamps, pa.int64()), key_array, values],
        schema=flow_schema(key_array.type, values.type, False),
    )
    return Flow(carry_walk(table, taken.table), False, keys, values.to_pylist())


def _subscriptions(pks: list[Any], pk_type: pa.DataType, hashes: list[bytes | None], ops: list[int]) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [pa.array(pks, pk_type), pa.array(hashes, pa.binary()), pa.array(ops, pa.int8())], names=[PK, HASH, OP]
    )


def _responses(hashes: list[bytes | None], foreign: list[Any]) -> pa.StructArray:
    pickled = [None if v is None else pickle.dumps(v, protocol=5) for v in foreign]
    return pa.StructArray.from_arrays([pa.array(hashes, pa.binary()), pa.array(pickled, pa.binary())], names=[HASH, FOREIGN_VALUE])


class SubscriptionSendOperator(Operator, node=SubscriptionSendNode):
    """Kafka's SubscriptionSendProcessor (as of Kafka 4.3): an update of a left row from ``old`` to
    ``new`` subscribes the row to its new foreign key and, when the key changed, unsubscribes it
    from the old one without an answer. Inner join: a row keeping its key, or getting its first,
    subscribes only-if-found (no answer where there is no right row); a changed key answers
    None if not found (the result row goes); a deleted row, or one whose key became None,
    unsubscribes with an answer (its delete). Left join: the new key (None included, and for a
    deleted row too) is always sent, null-if-not-found."""

    node: SubscriptionSendNode

    def __init__(self, node: SubscriptionSendNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        (this_table,) = parents
        source, _ = table_chain(build, this_table)
        self.own = table_getter(build, this_table, source.store)
        self.caching = build.caching

    def _extract(self, key: Any, value: Any, seq: int, context: ProcessContext) -> tuple[bool, Any]:
        extractor = self.node.extractor
        try:
            return True, (extractor.fn(key, value) if extractor.takes_key else extractor.fn(value))
        except Exception as e:  # noqa: BLE001 - a failing extractor rejects its update, not the batch
            context.bad.reject(seq, self.name, f"{extractor.describe()} raised {type(e).__name__}: {e}", key, value, error=e)
            return False, None

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        key_type = flow.key_type
        if not len(flow):
            return _records(flow, [], [], None, _subscriptions([], key_type, [], []), [])
        own = self.own.lookup(flow, key_bytes(flow.table.column(KEY)), context, AT_START if self.caching else None)
        olds = own.values
        if not own.kept.all():
            flow, olds = flow.filter(own.kept), own.select(olds)
        rows, fks, pks, hashes, ops, stamps = [], [], [], [], [], []

        def send(i: int, fk: Any, op: Instruction) -> None:
            rows.append(i), fks.append(fk), pks.append(keys[i]), hashes.append(value_hash(news[i])), ops.append(int(op)), stamps.append(int(times[i]))

        keys, news, times, seqs = flow.keys(), flow.values(), flow.timestamps, flow.seqs
        for i, (key, new, old) in enumerate(zip(keys, news, olds, strict=True)):
            ok_old, old_fk = self._extract(key, old, seqs[i], context) if old is not None else (True, None)
            ok_new, new_fk = self._extract(key, new, seqs[i], context) if new is not None else (True, None)
            if not (ok_old and ok_new):
                continue
            if self.node.left:
                if old is None and new is None:
                    continue
                if old_fk is not None and _fk_bytes(new_fk) != _fk_bytes(old_fk):
                    send(i, old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
                send(i, new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
                continue
            if new is None:
                if old_fk is not None:
                    send(i, old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
            elif new_fk is None:
                context.drop(1)  # Kafka: "Skipping record due to null foreign key"
                if old_fk is not None:
                    send(i, old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
            elif old_fk is not None and _fk_bytes(new_fk) != _fk_bytes(old_fk):
                send(i, old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
                send(i, new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            else:
                send(i, new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        return _records(flow, rows, fks, None, _subscriptions(pks, key_type, hashes, ops), stamps)


def _fk_bytes(fk: Any) -> bytes | None:
    """A foreign key as its topic stores it (Kafka compares serialized keys)."""
    return None if fk is None else key_bytes(pa.array([fk]))[0]


class SubscriptionReceiveOperator(Operator, node=SubscriptionReceiveNode):
    """Kafka's SubscriptionReceiveProcessor: stores (or, for a delete instruction, removes) each
    subscription under ``(fk, pk)``; a subscription with a None foreign key (a left join's) is not
    stored but still answered; any other with a None key is dropped."""

    node: SubscriptionReceiveNode

    def __init__(self, node: SubscriptionReceiveNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.store = build.stores[node.store]
        self.changes = build.table_changes.setdefault(node.store, BatchChanges())
        self.rank = build.ranks.get(node.name, 0)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        self.changes.clear()
        if not len(flow):
            return flow
        keys, values = flow.keys(), flow.values()
        keep = np.ones(len(flow), dtype=bool)
        fk_keys = flow.table.column(KEY)
        fk_raw = key_bytes(fk_keys.drop_null() if fk_keys.null_count else fk_keys)
        fk_iter = iter(fk_raw)
        pk_raw = key_bytes(flow.table.column(VALUE).combine_chunks().field(PK))
        at = turns(flow, self.rank)
        for i, (fk, sub) in enumerate(zip(keys, values, strict=True)):
            if fk is None:
                if sub[OP] != Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                    keep[i] = False
                    context.drop(1)
                continue
            combined = combined_prefix(next(fk_iter)) + pk_raw[i]
            before = self.store.get(combined)
            if sub[OP] in (Instruction.DELETE_KEY_AND_PROPAGATE, Instruction.DELETE_KEY_NO_PROPAGATE):
                self.store.delete(combined)
                stored = None
            else:
                stored = pickle.dumps((sub[PK], sub[HASH], int(flow.timestamps[i])), protocol=5)
                self.store.put(combined, stored)
            self.changes.record(combined, before, at[i], stored)
        return flow if keep.all() else flow.filter(keep)


class SubscriptionJoinOperator(Operator, node=SubscriptionJoinNode):
    """Kafka's SubscriptionJoinProcessor: answers a subscription with the right row of its
    foreign key as of its turn, timed as the later of the two: a delete instruction answers
    None; propagate-null answers the row or None; propagate-only-if-found answers only a row;
    a delete without propagation answers nothing."""

    node: SubscriptionJoinNode

    def __init__(self, node: SubscriptionJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.getter = table_getter(build, node.table, node.store, reader=node.name)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        if not len(flow):
            return _records(flow, [], [], None, _responses([], []), [])
        subs = flow.values()
        pk_type = flow.table.column(VALUE).type.field(PK).type
        fk_keys = flow.table.column(KEY)
        foreign: list[Any] = [None] * len(flow)
        foreign_ts: list[int | None] = [None] * len(flow)
        keyed = np.flatnonzero(np.asarray(fk_keys.is_valid())) if fk_keys.null_count else np.arange(len(flow))
        if len(keyed):
            with_key = flow.take(keyed)
            found = self.getter.lookup(with_key, key_bytes(with_key.table.column(KEY)), context)
            for i, value, ts, kept in zip(keyed, found.values, found.stamps, found.kept, strict=True):
                if kept:
                    foreign[i], foreign_ts[i] = value, ts
        rows, pks, hashes, values, stamps = [], [], [], [], []
        times = flow.timestamps
        for i, sub in enumerate(subs):
            op = sub[OP]
            ts = int(times[i]) if foreign_ts[i] is None else max(int(times[i]), int(foreign_ts[i]))
            if op == Instruction.DELETE_KEY_AND_PROPAGATE:
                answer = None
            elif op == Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                answer = foreign[i]
            elif op == Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and foreign[i] is not None:
                answer = foreign[i]
            else:
                continue
            rows.append(i), pks.append(sub[PK]), hashes.append(sub[HASH]), values.append(answer), stamps.append(ts)
        return _records(flow, rows, pks, pk_type, _responses(hashes, values), stamps)


class ForeignTableJoinOperator(Operator, node=ForeignTableJoinNode):
    """Kafka's ForeignTableJoinProcessor: an update of a right row (delete included) answers
    every subscription of its key with the new value, at the update's timestamp. Rows with a
    None key are dropped."""

    node: ForeignTableJoinNode

    def __init__(self, node: ForeignTableJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.store = build.stores[node.store]
        self.changes = build.table_changes.setdefault(node.store, BatchChanges())
        self.rank = build.ranks.get(node.name, 0)
        # With caching, Kafka forwards the right table's updates at commit, when every
        # subscription of the batch is in the store.
        self.caching = build.caching

    def _subscribers(self, prefix: bytes, at) -> list[tuple[Any, bytes, int]]:
        found = dict(self.store.range(prefix, prefix[:-1] + bytes([prefix[-1] + 1]) if prefix[-1] < 255 else None))
        found = {k: v for k, v in found.items() if k.startswith(prefix)}
        for combined in self.changes.by_key:
            if combined.startswith(prefix):
                found.setdefault(combined, None)
        out = []
        for combined in sorted(found):
            changed, raw = self.changes.as_of(combined, at)
            raw = raw if changed else found[combined]
            if raw is not None:
                out.append(pickle.loads(raw))
        return out

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        fk_keys = flow.table.column(KEY)
        if fk_keys.null_count:
            context.drop(fk_keys.null_count)
            flow = flow.filter(np.asarray(fk_keys.is_valid()))
        rows, pks, hashes, values, stamps = [], [], [], [], []
        if len(flow):
            at = [AT_END] * len(flow) if self.caching else turns(flow, self.rank)
            times, news = flow.timestamps, flow.values()
            for i, fk_raw in enumerate(key_bytes(flow.table.column(KEY))):
                for pk, hashed, _ in self._subscribers(combined_prefix(fk_raw), at[i]):
                    rows.append(i), pks.append(pk), hashes.append(hashed), values.append(news[i]), stamps.append(int(times[i]))
        return _records(flow, rows, pks, None, _responses(hashes, values), stamps)


class ResponseJoinOperator(Operator, node=ResponseJoinNode):
    """Kafka's ResponseJoinProcessor: a response whose hash matches the left row as it is at
    its turn forwards ``joiner(left, foreign)``, or a delete where the foreign value is None
    (inner join) or the left row is gone; a response to a superseded left value is dropped."""

    node: ResponseJoinNode

    def __init__(self, node: ResponseJoinNode, parents: tuple[str, ...], build: BuildContext) -> None:
        super().__init__(node, parents, build)
        self.getter = table_getter(build, node.table, node.store, reader=node.name)

    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        if not len(flow):
            return flow
        current = self.getter.lookup(flow, key_bytes(flow.table.column(KEY)), context)
        keys, responses, seqs = flow.keys(), flow.values(), flow.seqs
        joiner, rows, results = self.node.joiner, [], []
        for i, (key, response, left_value) in enumerate(zip(keys, responses, current.values, strict=True)):
            if not current.kept[i]:
                continue
            if response is None:
                # The answer to a deleted left row (no hash, no foreign value): its fields are all
                # null, and a topic keeps one column per field, so it reads back as a null value.
                response = _NO_ANSWER
            if response[HASH] != value_hash(left_value):
                context.drop(1)  # stale: the left row changed since this subscription was sent (Kafka counts it)
                continue
            foreign = None if response[FOREIGN_VALUE] is None else pickle.loads(response[FOREIGN_VALUE])
            if foreign is None and (not self.node.left or left_value is None):
                result = None
            else:
                try:
                    result = joiner.fn(key, left_value, foreign) if joiner.takes_key else joiner.fn(left_value, foreign)
                except Exception as e:  # noqa: BLE001 - any user error goes to the dead letters
                    context.bad.reject(seqs[i], self.name, f"{joiner.describe()} raised {type(e).__name__}: {e}", key, left_value, error=e)
                    continue
            rows.append(i), results.append(result)
        taken = flow.take(np.asarray(rows, dtype=np.int64))
        array, bad = infer_array(results, None)
        out = Flow(taken.table.set_column(taken.table.schema.get_field_index(VALUE), VALUE, array), False, taken._keys, results)
        for j in bad:
            context.bad.reject(int(taken.seqs[j]), self.name, "the joiner's result does not fit the type of the other results", keys[rows[j]], results[j])
        if bad:
            keep = np.ones(len(out), dtype=bool)
            keep[bad] = False
            out = out.filter(keep)
        return out
