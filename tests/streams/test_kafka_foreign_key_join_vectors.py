"""Foreign-key table joins on the test driver, against Kafka's own test vectors
(``KTableKTableForeignKeyJoinIntegrationTest``, which runs on Kafka's TopologyTestDriver, and
``KStreamImplTest``'s describe() of a foreign-key join)."""

from __future__ import annotations

import pytest

from deltastreams.streams import StreamsBuilder, TopologyTestDriver

LEFT, RIGHT, OUTPUT = "left_table", "right_table", "output-topic"


def _topology(*, left_join: bool, store: str | None = "store", extractor=lambda v: v.split("|")[1], name: str | None = None):
    """Kafka's ``getTopology``: two source tables, joined by the foreign key after ``|``."""
    builder = StreamsBuilder()
    left, right = builder.table(LEFT), builder.table(RIGHT)
    join = left.left_join if left_join else left.join
    join(right, extractor, lambda lv, rv: f"({lv},{rv})", name=name, store_name=store).to_stream().to(OUTPUT)
    return builder.build()


def _driver(topology) -> TopologyTestDriver:
    return TopologyTestDriver(topology, {"caching": False})


def _out(driver: TopologyTestDriver) -> dict:
    """Kafka's ``readKeyValuesToMap``: the last value per key read since the last call."""
    return {r.key: r.value for r in driver.read_output(OUTPUT)}


def _store(driver: TopologyTestDriver) -> dict:
    view = driver.get_key_value_store("store")
    return {k: view.get(k) for k in ("lhs1", "lhs2", "lhs3") if view.get(k) is not None}


both = pytest.mark.parametrize("left_join", [True, False], ids=["left", "inner"])


def test_describe_names_nodes_topics_and_stores_as_kafka():
    """KStreamImplTest.shouldSupportForeignKeyTableTableJoinWithKTableFromKStream: describe()
    character for character, then the first joins."""
    builder = StreamsBuilder()
    left, right = builder.stream("input1").to_table(), builder.stream("input2").to_table()
    left.join(right, lambda v: v.split("|")[1], lambda a, b: f"({a},{b})").to_stream().to("output")
    topology = builder.build()
    assert str(topology.describe()) == KAFKA_DESCRIBE
    assert topology.internal_topics == {
        "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic",
        "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic",
    }
    with TopologyTestDriver(topology) as driver:
        for key, value in (("rhs1", "rhsValue1"), ("rhs2", "rhsValue2"), ("rhs3", "rhsValue3")):
            driver.pipe_input("input2", key, value, 0)
        assert driver.read_output("output") == []
        driver.pipe_input("input1", "lhs1", "lhsValue1|rhs1", 1)
        driver.pipe_input("input1", "lhs2", "lhsValue2|rhs2", 2)
        got = {r.key: r.value for r in driver.read_output("output")}
        assert got == {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)"}


def test_named_join_names_every_node_topic_and_store_after_it():
    """Kafka's ``TableJoined.as(name)``: ``<name>-subscription-registration-topic`` and the
    other suffixes of ``KTableImpl.doJoinOnForeignKey``."""
    text = str(_topology(left_join=False, name="fk").describe())
    for expected in (
        "Sink: fk-subscription-registration-sink (topic: fk-subscription-registration-topic)",
        "Processor: fk-subscription-receive (stores: [fk-subscription-store])",
        "Processor: fk-foreign-join-subscription (stores: [fk-subscription-store])",
        "Sink: fk-subscription-response-sink (topic: fk-subscription-response-topic)",
        "Processor: fk-subscription-response-resolver",
        "Processor: fk-result (stores: [store])",
    ):
        assert expected in text


@both
def test_join_from_left_then_delete_left_entity(left_join):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromLeftThenDeleteLeftEntity (materialized)."""
    with _driver(_topology(left_join=left_join)) as driver:
        driver.pipe_input(RIGHT, "rhs1", "rhsValue1", 0)
        driver.pipe_input(RIGHT, "rhs2", "rhsValue2", 1)
        driver.pipe_input(RIGHT, "rhs3", "rhsValue3", 2)
        assert _out(driver) == {} and _store(driver) == {}
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 3)
        driver.pipe_input(LEFT, "lhs2", "lhsValue2|rhs2", 4)
        expected = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        assert _out(driver) == expected and _store(driver) == expected
        driver.pipe_input(LEFT, "lhs3", "lhsValue3|rhs1", 5)
        assert _out(driver) == {"lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        driver.pipe_input(LEFT, "lhs1", None, 6)
        assert _out(driver) == {"lhs1": None}
        assert _store(driver) == {"lhs2": "(lhsValue2|rhs2,rhsValue2)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}


@both
def test_join_from_right_then_delete_right_entity(left_join):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromRightThenDeleteRightEntity."""
    with _driver(_topology(left_join=left_join)) as driver:
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 0)
        driver.pipe_input(LEFT, "lhs2", "lhsValue2|rhs2", 1)
        driver.pipe_input(LEFT, "lhs3", "lhsValue3|rhs1", 2)
        unmatched = {"lhs1": "(lhsValue1|rhs1,None)", "lhs2": "(lhsValue2|rhs2,None)", "lhs3": "(lhsValue3|rhs1,None)"}
        assert _out(driver) == (unmatched if left_join else {})
        driver.pipe_input(RIGHT, "rhs1", "rhsValue1", 3)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        driver.pipe_input(RIGHT, "rhs2", "rhsValue2", 4)
        assert _out(driver) == {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        driver.pipe_input(RIGHT, "rhs3", "rhsValue3", 5)  # unreferenced
        assert _out(driver) == {}
        driver.pipe_input(RIGHT, "rhs1", None, 6)
        assert _out(driver) == {
            "lhs1": "(lhsValue1|rhs1,None)" if left_join else None,
            "lhs3": "(lhsValue3|rhs1,None)" if left_join else None,
        }
        expected = {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        if left_join:
            expected |= {"lhs1": "(lhsValue1|rhs1,None)", "lhs3": "(lhsValue3|rhs1,None)"}
        assert _store(driver) == expected


@both
def test_emit_tombstone_when_deleting_non_joining_records(left_join):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitTombstoneWhenDeletingNonJoiningRecords
    and shouldNotEmitTombstonesWhenDeletingNonExistingRecords."""
    with _driver(_topology(left_join=left_join)) as driver:
        driver.pipe_input(LEFT, "lhs0", None, 0)  # never existed: nothing at all
        assert _out(driver) == {}
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 1)
        assert _out(driver) == ({"lhs1": "(lhsValue1|rhs1,None)"} if left_join else {})
        driver.pipe_input(LEFT, "lhs1", None, 2)
        assert _out(driver) == {"lhs1": None}
        driver.pipe_input(LEFT, "lhs1", None, 3)
        assert _out(driver) == {}


@both
def test_nulls_when_value_has_non_matching_foreign_key(left_join):
    """KTableKTableForeignKeyJoinIntegrationTest.joinShouldProduceNullsWhenValueHasNonMatchingForeignKey."""
    with _driver(_topology(left_join=left_join)) as driver:
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 0)
        assert _out(driver) == ({"lhs1": "(lhsValue1|rhs1,None)"} if left_join else {})
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs2", 1)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs2,None)" if left_join else None}
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs3", 2)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs3,None)" if left_join else None}
        driver.pipe_input(RIGHT, "rhs1", "rhsValue1", 3)  # no longer referenced
        assert _out(driver) == {}
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 4)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs2", 5)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs2,None)" if left_join else None}


@both
def test_unsubscribe_old_foreign_key_if_left_side_is_updated(left_join):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated."""
    with _driver(_topology(left_join=left_join)) as driver:
        driver.pipe_input(RIGHT, "rhs1", "rhsValue1", 0)
        driver.pipe_input(RIGHT, "rhs2", "rhsValue2", 1)
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 2)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs2", 3)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}
        driver.pipe_input(RIGHT, "rhs1", "rhsValue1Delta", 4)
        assert _out(driver) == {}
        assert _store(driver) == {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}


def test_left_join_emits_record_on_null_foreign_key():
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordOnNullForeignKeyForLeftJoins;
    an inner join drops such a row (Kafka: "Skipping record due to null foreign key")."""
    with _driver(_topology(left_join=True, extractor=lambda v: None)) as driver:
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 0)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs1,None)"}
    with _driver(_topology(left_join=False, extractor=lambda v: None)) as driver:
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 0)
        assert _out(driver) == {} and driver.dropped_records == 1


def test_left_join_emits_record_when_old_and_new_foreign_key_differ():
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordWhenOldAndNewFkDiffer: the
    subscription of the old key is removed from the subscription store."""
    extractor = lambda v: None if v.split("|")[1] == "returnNull" else v.split("|")[1]  # noqa: E731
    topology = _topology(left_join=True, extractor=extractor)
    (subscriptions,) = [s for s in topology.stores if "SUBSCRIPTION-STATE-STORE" in s]
    with _driver(topology) as driver:
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|rhs1", 0)
        assert _out(driver) == {"lhs1": "(lhsValue1|rhs1,None)"}
        assert len(driver.store_entries(subscriptions)) == 1
        driver.pipe_input(LEFT, "lhs1", "lhsValue1|returnNull", 0)
        assert _out(driver) == {"lhs1": "(lhsValue1|returnNull,None)"}
        assert driver.store_entries(subscriptions) == []


def test_stale_response_to_a_superseded_left_value_is_dropped():
    """The hash check: two updates of a left row in one batch send two subscriptions; the
    response to the first comes back after the row changed again and must not be joined
    (only the current value's join comes out)."""
    with _driver(_topology(left_join=False)) as driver:
        driver.pipe_batch(RIGHT, [("rhs1", "rhsValue1", 0), ("rhs2", "rhsValue2", 0)])
        driver.pipe_batch(LEFT, [("lhs1", "lhsValue1|rhs1", 1), ("lhs1", "lhsValue1|rhs2", 2)])
        records = [(r.key, r.value) for r in driver.read_output(OUTPUT)]
        assert records == [("lhs1", "(lhsValue1|rhs2,rhsValue2)")]
        assert driver.dropped_records == 1  # the stale response, counted as Kafka counts it


def test_restart_restores_subscriptions_from_the_changelog():
    """After a crash the subscription store is rebuilt from its changelog: a right update
    still reaches the left rows subscribed before."""
    with _driver(_topology(left_join=False)) as driver:
        driver.pipe_input(RIGHT, "rhs1", "v1", 0)
        driver.pipe_input(LEFT, "lhs1", "l|rhs1", 1)
        assert _out(driver) == {"lhs1": "(l|rhs1,v1)"}
        driver.restart()
        driver.pipe_input(RIGHT, "rhs1", "v2", 2)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output(OUTPUT)] == [("lhs1", "(l|rhs1,v2)", 2)]


KAFKA_DESCRIBE = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KTABLE-SOURCE-0000000016 (topics: [KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input1])\n"
    "      --> KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-FK-JOIN-OUTPUT-0000000018\n"
    "      <-- KTABLE-SOURCE-0000000016\n"
    "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KTABLE-FK-JOIN-OUTPUT-0000000018 (stores: [])\n"
    "      --> KTABLE-TOSTREAM-0000000020\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007 (stores: [])\n"
    "      --> KTABLE-SINK-0000000008\n"
    "      <-- KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KTABLE-TOSTREAM-0000000020 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000021\n"
    "      <-- KTABLE-FK-JOIN-OUTPUT-0000000018\n"
    "    Sink: KSTREAM-SINK-0000000021 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000020\n"
    "    Sink: KTABLE-SINK-0000000008 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic)\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000003 (topics: [input2])\n"
    "      --> KSTREAM-TOTABLE-0000000004\n"
    "    Source: KTABLE-SOURCE-0000000009 (topics: [KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011\n"
    "    Processor: KSTREAM-TOTABLE-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013\n"
    "      <-- KSTREAM-SOURCE-0000000003\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011 (stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012\n"
    "      <-- KTABLE-SOURCE-0000000009\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
    "      --> KTABLE-SINK-0000000015\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013 (stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])\n"
    "      --> KTABLE-SINK-0000000015\n"
    "      <-- KSTREAM-TOTABLE-0000000004\n"
    "    Sink: KTABLE-SINK-0000000015 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic)\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012, KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013\n\n"
)


def test_left_join_foreign_key_change_emits_only_the_new_join():
    """Kafka 4.3's left join unsubscribes the old key without an answer (DELETE_KEY_NO_PROPAGATE):
    a foreign-key change gives the new join only, no (left, None) first."""
    with _driver(_topology(left_join=True)) as driver:
        driver.pipe_input(RIGHT, "rhs1", "r1", 0)
        driver.pipe_input(RIGHT, "rhs2", "r2", 0)
        driver.pipe_input(LEFT, "lhs1", "l|rhs1", 1)
        driver.pipe_input(LEFT, "lhs1", "l|rhs2", 2)
        assert [(r.key, r.value) for r in driver.read_output(OUTPUT)] == [("lhs1", "(l|rhs1,r1)"), ("lhs1", "(l|rhs2,r2)")]


def test_inner_join_row_keeping_its_key_without_a_match_emits_nothing():
    """Kafka 4.3 subscribes a row that keeps its foreign key only-if-found: no tombstone for a
    row that never joined (found by the differential oracle against Kafka 4.3.1)."""
    with _driver(_topology(left_join=False)) as driver:
        driver.pipe_input(LEFT, "lhs1", "a|rhs1", 1)
        driver.pipe_input(LEFT, "lhs1", "b|rhs1", 2)
        assert driver.read_output(OUTPUT) == []
