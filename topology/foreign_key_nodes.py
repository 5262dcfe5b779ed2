"""The nodes of a foreign-key table join (Kafka's ``KTable.join / leftJoin(other,
foreignKeyExtractor, joiner)``, KIP-213), and how the DSL lays them out.

Kafka builds the join from two internal topics, each a sub-topology boundary:

1. the left table's sub-topology registers every left row with the row of the right table it
   points at: ``SUBSCRIPTION-REGISTRATION`` sends ``(fk, {pk, hash, instruction})`` to the
   subscription topic, keyed (so partitioned) by the foreign key;
2. the right table's sub-topology keeps those subscriptions in the subscription store, keyed by
   ``(fk, pk)``; a new subscription looks the right row up (``subscription-join-foreign``), a
   right-row update finds its subscribers by prefix (``foreign-join-subscription``); both send
   ``(pk, {hash, foreign value})`` to the response topic, keyed by the primary key;
3. back in the left table's sub-topology the resolver joins a response with the left row as it
   is now, but only if the row still hashes to what the subscription carried: a response to a
   superseded left value (the left row changed while the response travelled) is dropped.

So the sub-topologies depend on each other both ways; the runtimes handle that cycle (a response
is processed in the trigger after the one that wrote it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from deltastreams.topology.functions import UserFunction
from deltastreams.topology.nodes import Node, SinkNode, SourceNode, TableSourceNode


class Instruction(IntEnum):
    """What the right side does with a subscription (Kafka's ``SubscriptionWrapper.Instruction``)."""

    DELETE_KEY_NO_PROPAGATE = 0
    DELETE_KEY_AND_PROPAGATE = 1
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3


@dataclass(frozen=True)
class SubscriptionSendNode(Node):
    """Kafka's SubscriptionSendProcessor: each update of the left table ``table`` (old value read
    from its store ``store``) becomes subscription records keyed by foreign key."""

    extractor: UserFunction
    table: str
    store: str
    left: bool

    @property
    def function(self) -> UserFunction:
        return self.extractor

    @property
    def described_stores(self) -> tuple[str, ...]:
        return ()

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class SubscriptionReceiveNode(Node):
    """Kafka's SubscriptionReceiveProcessor: keeps the subscriptions in ``store``."""

    store: str

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class SubscriptionJoinNode(Node):
    """Kafka's SubscriptionJoinProcessor: a subscription looks up its foreign key in the right
    table ``table`` (store ``store``) and answers, keyed by the primary key."""

    table: str
    store: str

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class ForeignTableJoinNode(Node):
    """Kafka's ForeignTableJoinProcessor: an update of the right table answers every subscription
    of its key in ``store``."""

    store: str

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class ResponseJoinNode(Node):
    """Kafka's ResponseJoinProcessor: joins a response with the left table ``table`` (store
    ``store``) where the left row still has the hash the subscription was sent with."""

    joiner: UserFunction
    table: str
    store: str
    left: bool

    @property
    def function(self) -> UserFunction:
        return self.joiner

    @property
    def stores(self) -> tuple[str, ...]:
        return (self.store,)


@dataclass(frozen=True)
class ForeignKeyJoinNames:
    """Every name a foreign-key join takes, in Kafka's order of taking them from the counter."""

    subscription_topic: str
    send: str
    subscription_sink: str
    subscription_source: str
    subscription_store: str
    receive: str
    join_foreign: str
    foreign_join: str
    response_topic: str
    response_sink: str
    response_source: str
    resolver: str
    result: str
    result_store: str
    result_materialized: bool

    @classmethod
    def of(cls, graph, name: str | None, store_name: str | None) -> ForeignKeyJoinNames:
        """Kafka's ``NamedInternal.suffixWithOrElseGet``: ``<name><suffix>`` when the join is
        named (``TableJoined.as(name)``), else a counter name (taken either way, so naming the
        join does not rename the nodes after it); ``Materialized.as(store_name)``
        names (and materializes) the result's store."""

        def take(suffix: str, prefix: str) -> str:
            generated = graph.processor_name(prefix)  # Kafka burns the counter value when named too
            return f"{name}{suffix}" if name is not None else generated

        fk = "KTABLE-FK-JOIN-"
        return cls(
            subscription_topic=take("-subscription-registration", f"{fk}SUBSCRIPTION-REGISTRATION") + "-topic",
            send=take("-subscription-registration-processor", f"{fk}SUBSCRIPTION-REGISTRATION"),
            subscription_sink=take("-subscription-registration-sink", "KTABLE-SINK"),
            subscription_source=take("-subscription-registration-source", "KTABLE-SOURCE"),
            subscription_store=take("-subscription-store", f"{fk}SUBSCRIPTION-STATE-STORE"),
            receive=take("-subscription-receive", f"{fk}SUBSCRIPTION-PROCESSOR"),
            join_foreign=take("-subscription-join-foreign", f"{fk}SUBSCRIPTION-PROCESSOR"),
            foreign_join=take("-foreign-join-subscription", f"{fk}SUBSCRIPTION-PROCESSOR"),
            response_topic=take("-subscription-response", f"{fk}SUBSCRIPTION-RESPONSE") + "-topic",
            response_sink=take("-subscription-response-sink", "KTABLE-SINK"),
            response_source=take("-subscription-response-source", "KTABLE-SOURCE"),
            resolver=take("-subscription-response-resolver", f"{fk}SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR"),
            result=take("-result", f"{fk}OUTPUT"),
            # Kafka's MaterializedInternal takes a store name from the counter unless named.
            result_store=store_name if store_name is not None else graph.store_name(f"{fk}OUTPUT"),
            result_materialized=store_name is not None,
        )


def add_foreign_key_join(
    graph,
    left_table: str,
    left_store: str,
    right_table: str,
    right_store: str,
    extractor: UserFunction,
    joiner: UserFunction,
    *,
    left: bool,
    name: str | None,
    store_name: str | None,
) -> tuple[str, str | None]:
    """Add the join's nodes to ``graph``; returns the result table's node and its source node
    (for a named store) or None."""
    n = ForeignKeyJoinNames.of(graph, name, store_name)
    graph.add(SubscriptionSendNode(n.send, extractor, left_table, left_store, left), [left_table])
    graph.add(SinkNode(n.subscription_sink, n.subscription_topic, internal=True), [n.send])
    graph.add(SourceNode(n.subscription_source, (n.subscription_topic,), internal=True))
    graph.add(SubscriptionReceiveNode(n.receive, n.subscription_store), [n.subscription_source])
    graph.add(SubscriptionJoinNode(n.join_foreign, right_table, right_store), [n.receive])
    graph.add(ForeignTableJoinNode(n.foreign_join, n.subscription_store), [right_table])
    graph.add(SinkNode(n.response_sink, n.response_topic, internal=True), [n.join_foreign, n.foreign_join])
    graph.add(SourceNode(n.response_source, (n.response_topic,), internal=True))
    graph.add(ResponseJoinNode(n.resolver, joiner, left_table, left_store, left), [n.response_source])
    store = n.result_store if n.result_materialized else None
    graph.add(TableSourceNode(n.result, n.result_store, store=store), [n.resolver])
    return n.result, n.result
