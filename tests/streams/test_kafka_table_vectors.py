"""Kafka Streams' own unit-test vectors for tables and the stream-table join, run through our
TopologyTestDriver with caching off (as Kafka's tests run).

From apache/kafka (``streams/src/test/.../kstream/internals``): ``KStreamKTableJoinTest`` and
``KStreamKTableLeftJoinTest`` (``MockValueJoiner.TOSTRING_JOINER`` is ``value1 + "+" +
value2``, Java printing a missing value as ``null``), ``KTableSourceTest.testKTable``,
``KTableFilterTest.shouldPassThroughWithoutMaterialization`` and ``KTableMapValuesTest.testKTable``.
Kafka's table inputs there use random timestamps, which a non-versioned table ignores; a seeded
generator stands in. Where we differ on purpose (a null key in an inner join goes to the
dead-letter topic; Kafka drops it) the test says so.
"""

import random

import pytest

from deltastreams.streams import StreamsBuilder, TopologyTestDriver

NO_CACHE = {"caching": False}
KEYS = (0, 1, 2, 3)


def tostring_joiner(value1, value2):
    return f"{value1}+{'null' if value2 is None else value2}"


def kv(records):
    return [(r.key, r.value, r.timestamp) for r in records]


class JoinFixture:
    def __init__(self, left: bool, store_backend: str = "memory"):
        builder = StreamsBuilder()
        stream = builder.stream("streamTopic")
        table = builder.table("tableTopic")
        (stream.left_join if left else stream.join)(table, tostring_joiner).to("out")
        self.driver = TopologyTestDriver(builder.build(), NO_CACHE, store_backend=store_backend)
        self.random = random.Random(42)

    def push_to_stream(self, count, prefix):
        for i in range(count):
            self.driver.pipe_input("streamTopic", KEYS[i], f"{prefix}{KEYS[i]}", i)

    def push_to_table(self, count, prefix):
        for i in range(count):
            self.driver.pipe_input("tableTopic", KEYS[i], f"{prefix}{KEYS[i]}", self.random.randrange(2**31 - 1))

    def push_null_values_to_table(self, count):
        for i in range(count):
            self.driver.pipe_input("tableTopic", KEYS[i], None, 0)

    def results(self):
        return kv(self.driver.read_output("out"))


@pytest.fixture
def inner():
    fixture = JoinFixture(left=False)
    yield fixture
    fixture.driver.close()


@pytest.fixture
def left():
    fixture = JoinFixture(left=True)
    yield fixture
    fixture.driver.close()


# -- KStreamKTableJoinTest ------------------------------------------------------------------------


def test_inner_join_should_not_join_with_empty_table_on_stream_updates(inner):
    inner.push_to_stream(2, "X")
    assert inner.results() == []


def test_inner_join_should_not_join_on_table_updates(inner):
    inner.push_to_stream(2, "X")
    assert inner.results() == []
    inner.push_to_table(2, "Y")
    assert inner.results() == []
    inner.push_to_stream(4, "X")
    assert inner.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]
    inner.push_to_table(4, "YY")
    assert inner.results() == []
    inner.push_to_stream(4, "X")
    assert inner.results() == [(0, "X0+YY0", 0), (1, "X1+YY1", 1), (2, "X2+YY2", 2), (3, "X3+YY3", 3)]
    inner.push_to_table(4, "YYY")
    assert inner.results() == []


def test_inner_join_should_join_only_if_match_found_on_stream_updates(inner):
    inner.push_to_table(2, "Y")
    assert inner.results() == []
    inner.push_to_stream(4, "X")
    assert inner.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]


def test_inner_join_should_clear_table_entry_on_null_value_updates(inner):
    inner.push_to_table(4, "Y")
    assert inner.results() == []
    inner.push_to_stream(4, "X")
    assert inner.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1), (2, "X2+Y2", 2), (3, "X3+Y3", 3)]
    inner.push_null_values_to_table(2)
    assert inner.results() == []
    inner.push_to_stream(4, "XX")
    assert inner.results() == [(2, "XX2+Y2", 2), (3, "XX3+Y3", 3)]


def test_inner_join_skips_a_null_value_as_dropped_and_sends_a_null_key_to_the_dead_letter_topic(inner):
    # shouldLogAndMeterWhenSkippingNullLeftValue / ...NullLeftKey: Kafka skips both and counts a
    # dropped record. A null value is skipped here too; a null key goes to the dead-letter topic,
    # as everywhere else in deltastreams, so no record disappears unseen.
    inner.push_to_table(1, "Y")
    inner.driver.pipe_input("streamTopic", 0, None, 0)
    assert inner.results() == [] and inner.driver.dropped_records == 1
    inner.driver.pipe_input("streamTopic", None, "A", 0)
    assert inner.results() == []
    (dead,) = inner.driver.dead_letters()
    assert "null key" in dead.value["reason"] and dead.value["source_topic"] == "streamTopic"


def test_copartition_group_is_the_stream_and_the_table_topic():
    # shouldRequireCopartitionedStreams: the join makes one sub-topology of both topics.
    builder = StreamsBuilder()
    builder.stream("streamTopic").join(builder.table("tableTopic"), tostring_joiner).to("out")
    (sub,) = builder.build().subtopologies
    assert set(sub.source_topics) == {"streamTopic", "tableTopic"}


# -- KStreamKTableLeftJoinTest --------------------------------------------------------------------


def test_left_join_should_join_with_empty_table_on_stream_updates(left):
    left.push_to_stream(2, "X")
    assert left.results() == [(0, "X0+null", 0), (1, "X1+null", 1)]


def test_left_join_should_not_join_on_table_updates(left):
    left.push_to_stream(2, "X")
    assert left.results() == [(0, "X0+null", 0), (1, "X1+null", 1)]
    left.push_to_table(2, "Y")
    assert left.results() == []
    left.push_to_stream(4, "X")
    assert left.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1), (2, "X2+null", 2), (3, "X3+null", 3)]
    left.push_to_table(4, "YY")
    assert left.results() == []
    left.push_to_stream(4, "X")
    assert left.results() == [(0, "X0+YY0", 0), (1, "X1+YY1", 1), (2, "X2+YY2", 2), (3, "X3+YY3", 3)]
    left.push_to_table(4, "YYY")
    assert left.results() == []


def test_left_join_should_join_regardless_if_match_found_on_stream_updates(left):
    left.push_to_table(2, "Y")
    assert left.results() == []
    left.push_to_stream(4, "X")
    assert left.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1), (2, "X2+null", 2), (3, "X3+null", 3)]


def test_left_join_should_clear_table_entry_on_null_value_updates(left):
    left.push_to_table(4, "Y")
    left.push_to_stream(4, "X")
    assert left.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1), (2, "X2+Y2", 2), (3, "X3+Y3", 3)]
    left.push_null_values_to_table(2)
    assert left.results() == []
    left.push_to_stream(4, "XX")
    assert left.results() == [(0, "XX0+null", 0), (1, "XX1+null", 1), (2, "XX2+Y2", 2), (3, "XX3+Y3", 3)]


def test_left_join_joins_a_null_key_with_no_row():
    # Kafka 3.7+ (KIP-962): a left join passes a record with a null key on, with no table row.
    fixture = JoinFixture(left=True)
    fixture.driver.pipe_input("streamTopic", None, "A", 3)
    assert fixture.results() == [(None, "A+null", 3)]
    assert fixture.driver.dead_letters() == []


# -- KTableSourceTest, KTableFilterTest, KTableMapValuesTest --------------------------------------


def test_table_source_forwards_every_update_and_delete():
    builder = StreamsBuilder()
    builder.table("topic1").to_stream().to("out")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        for key, value, ts in [("A", 1, 10), ("B", 2, 11), ("C", 3, 12), ("D", 4, 13), ("A", None, 14), ("B", None, 15)]:
            driver.pipe_input("topic1", key, value, ts)
        assert kv(driver.read_output("out")) == [("A", 1, 10), ("B", 2, 11), ("C", 3, 12), ("D", 4, 13), ("A", None, 14), ("B", None, 15)]


def test_table_filter_and_filter_not_forward_deletes_for_rows_they_drop():
    builder = StreamsBuilder()
    table = builder.table("topic1")
    table.filter(lambda key, value: value % 2 == 0).to_stream().to("even")
    table.filter_not(lambda key, value: value % 2 == 0).to_stream().to("odd")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        for key, value, ts in [("A", 1, 10), ("B", 2, 5), ("C", 3, 8), ("D", 4, 14), ("A", None, 18), ("B", None, 15)]:
            driver.pipe_input("topic1", key, value, ts)
        assert kv(driver.read_output("even")) == [("A", None, 10), ("B", 2, 5), ("C", None, 8), ("D", 4, 14), ("A", None, 18), ("B", None, 15)]
        assert kv(driver.read_output("odd")) == [("A", 1, 10), ("B", None, 5), ("C", 3, 8), ("D", None, 14), ("A", None, 18), ("B", None, 15)]


def test_table_map_values():
    builder = StreamsBuilder()
    builder.table("topic1").map_values(lambda value: ord(value[0]) - 48).to_stream().to("out")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        for key, value, ts in [("A", "1", 5), ("B", "2", 25), ("C", "3", 20), ("D", "4", 10)]:
            driver.pipe_input("topic1", key, value, ts)
        assert kv(driver.read_output("out")) == [("A", 1, 5), ("B", 2, 25), ("C", 3, 20), ("D", 4, 10)]


# -- beyond Kafka's driver: batches, derived tables, restarts -------------------------------------


def test_a_batch_of_both_topics_joins_each_record_with_the_table_as_of_its_turn():
    # Kafka's driver processes one record at a time; a Spark batch holds both topics at once.
    # In PartitionGroup order (smallest head timestamp first) the stream record at 3 comes
    # before the table update at 5, the one at 7 after it.
    builder = StreamsBuilder()
    builder.stream("streamTopic").join(builder.table("tableTopic"), tostring_joiner).to("out")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        driver.pipe_input("tableTopic", 0, "old", 0)
        driver.pipe_together(
            [("streamTopic", 0, "a", 3), ("streamTopic", 0, "b", 7), ("tableTopic", 0, "new", 5), ("tableTopic", 1, "one", 6), ("streamTopic", 1, "c", 8)]
        )
        assert kv(driver.read_output("out")) == [(0, "a+old", 3), (0, "b+new", 7), (1, "c+one", 8)]
        driver.pipe_together([("tableTopic", 0, None, 9), ("streamTopic", 0, "d", 10), ("tableTopic", 0, "back", 11), ("streamTopic", 0, "e", 12)])
        assert kv(driver.read_output("out")) == [(0, "e+back", 12)]


def test_joining_a_filtered_and_mapped_table_reads_through_its_functions():
    builder = StreamsBuilder()
    users = builder.table("users").filter(lambda key, user: user["active"]).map_values(lambda user: user["region"])
    builder.stream("views").left_join(users, lambda view, region: f"{view}@{region}").to("out")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        driver.pipe_input("users", "u1", {"active": True, "region": "eu"}, 0)
        driver.pipe_input("users", "u2", {"active": False, "region": "us"}, 0)
        driver.pipe_input("views", "u1", "home", 1)
        driver.pipe_input("views", "u2", "home", 2)
        driver.pipe_input("users", "u1", {"active": False, "region": "eu"}, 3)
        driver.pipe_input("views", "u1", "away", 4)
        assert kv(driver.read_output("out")) == [("u1", "home@eu", 1), ("u2", "home@None", 2), ("u1", "away@None", 4)]
        assert driver.dead_letters() == []


@pytest.mark.parametrize("store_backend", ["memory", "rocksdb"])
def test_the_table_survives_a_restart_from_its_changelog(store_backend):
    fixture = JoinFixture(left=False, store_backend=store_backend)
    with fixture.driver as driver:
        fixture.push_to_table(3, "Y")
        driver.pipe_input("tableTopic", 1, None, 0)
        driver.restart()
        fixture.push_to_stream(4, "X")
        assert fixture.results() == [(0, "X0+Y0", 0), (2, "X2+Y2", 2)]


def test_to_table_materializes_a_stream_for_a_join():
    builder = StreamsBuilder()
    regions = builder.stream("user-regions").to_table()
    builder.stream("views").join(regions, lambda key, view, region: f"{key}:{view}@{region}").to("out")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        driver.pipe_input("user-regions", "u1", "eu", 0)
        driver.pipe_input("views", "u1", "home", 1)
        driver.pipe_input("views", "u9", "home", 2)
        assert kv(driver.read_output("out")) == [("u1", "u1:home@eu", 1)]


# -- KTableKTableInnerJoinTest, KTableKTableLeftJoinTest, KTableKTableOuterJoinTest (testJoin) ----


def outer_joiner(value1, value2):
    return f"{'null' if value1 is None else value1}+{'null' if value2 is None else value2}"


# Kafka's doTestJoin, step by step: (inputs, expected output) with inputs (topic, key, value, ts).
def _steps(kind):
    left, outer = kind != "join", kind == "outer_join"
    step = lambda expected_inner, expected_left, expected_outer: expected_outer if outer else (expected_left if left else expected_inner)  # noqa: E731
    yield (
        [("topic1", k, f"X{k}", 5 + k) for k in (0, 1)] + [("topic1", None, "SomeVal", 42)],
        step([], [(0, "X0+null", 5), (1, "X1+null", 6)], [(0, "X0+null", 5), (1, "X1+null", 6)]),
    )
    yield (
        [("topic2", k, f"Y{k}", 10 * k) for k in (0, 1)] + [("topic2", None, "AnotherVal", 73)],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
    )
    yield (
        [("topic1", k, f"XX{k}", 7) for k in KEYS],
        step([(0, "XX0+Y0", 7), (1, "XX1+Y1", 10)], [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10), (2, "XX2+null", 7), (3, "XX3+null", 7)],
             [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10), (2, "XX2+null", 7), (3, "XX3+null", 7)]),
    )
    yield ([("topic2", k, f"YY{k}", 5 * k) for k in KEYS], [(0, "XX0+YY0", 7), (1, "XX1+YY1", 7), (2, "XX2+YY2", 10), (3, "XX3+YY3", 15)])
    yield ([("topic1", k, f"XXX{k}", 6) for k in KEYS], [(0, "XXX0+YY0", 6), (1, "XXX1+YY1", 6), (2, "XXX2+YY2", 10), (3, "XXX3+YY3", 15)])
    yield (
        [("topic2", 0, None, 5), ("topic2", 1, None, 7)],
        step([(0, None, 6), (1, None, 7)], [(0, "XXX0+null", 6), (1, "XXX1+null", 7)], [(0, "XXX0+null", 6), (1, "XXX1+null", 7)]),
    )
    yield (
        [("topic1", k, f"XXXX{k}", 13) for k in KEYS],
        step([(2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)], [(0, "XXXX0+null", 13), (1, "XXXX1+null", 13), (2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
             [(0, "XXXX0+null", 13), (1, "XXXX1+null", 13), (2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)]),
    )
    yield (
        [("topic1", 0, None, 0), ("topic1", 1, None, 42), ("topic1", 2, None, 5), ("topic1", 3, None, 20)],
        step([(2, None, 10), (3, None, 20)], [(0, None, 0), (1, None, 42), (2, None, 10), (3, None, 20)],
             [(0, None, 0), (1, None, 42), (2, "null+YY2", 10), (3, "null+YY3", 20)]),
    )


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_table_table_join_matches_kafka(kind):
    builder = StreamsBuilder()
    table1, table2 = builder.table("topic1"), builder.table("topic2")
    getattr(table1, kind)(table2, outer_joiner).to_stream().to("output")
    topology = builder.build()
    (sub,) = topology.subtopologies
    assert set(sub.source_topics) == {"topic1", "topic2"}  # one co-partition group
    with TopologyTestDriver(topology, NO_CACHE) as driver:
        for inputs, expected in _steps(kind):
            for topic, key, value, ts in inputs:
                driver.pipe_input(topic, key, value, ts)
            assert kv(driver.read_output("output")) == expected, inputs
        assert driver.dropped_records == 2  # the two null keys


# KStreamImplTest.shouldSupportTableTableJoinWithKStreamToKTable
TABLE_TABLE_JOIN_OF_STREAMS_TO_TABLES = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [left])
      --> KSTREAM-TOTABLE-0000000001
    Source: KSTREAM-SOURCE-0000000003 (topics: [right])
      --> KSTREAM-TOTABLE-0000000004
    Processor: KSTREAM-TOTABLE-0000000001 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])
      --> KTABLE-JOINTHIS-0000000007
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-TOTABLE-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])
      --> KTABLE-JOINOTHER-0000000008
      <-- KSTREAM-SOURCE-0000000003
    Processor: KTABLE-JOINOTHER-0000000008 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])
      --> KTABLE-MERGE-0000000006
      <-- KSTREAM-TOTABLE-0000000004
    Processor: KTABLE-JOINTHIS-0000000007 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])
      --> KTABLE-MERGE-0000000006
      <-- KSTREAM-TOTABLE-0000000001
    Processor: KTABLE-MERGE-0000000006 (stores: [])
      --> KTABLE-TOSTREAM-0000000009
      <-- KTABLE-JOINTHIS-0000000007, KTABLE-JOINOTHER-0000000008
    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- KTABLE-MERGE-0000000006
    Sink: KSTREAM-SINK-0000000010 (topic: output)
      <-- KTABLE-TOSTREAM-0000000009

"""


def test_table_table_join_of_streams_turned_tables_matches_kafka():
    builder = StreamsBuilder()
    table1 = builder.stream("left").to_table()
    table2 = builder.stream("right").to_table()
    table1.join(table2, lambda v1, v2: f"{v1}+{v2}").to_stream().to("output")
    topology = builder.build()
    assert str(topology.describe()) == TABLE_TABLE_JOIN_OF_STREAMS_TO_TABLES
    with TopologyTestDriver(topology, NO_CACHE) as driver:
        for key, value in [("lhs1", "rhsValue1"), ("rhs2", "rhsValue2"), ("lhs3", "rhsValue3")]:
            driver.pipe_input("right", key, value, 0)
        assert driver.read_output("output") == []
        driver.pipe_input("left", "lhs1", "lhsValue1", 0)
        driver.pipe_input("left", "lhs2", "lhsValue2", 0)
        assert {r.key: r.value for r in driver.read_output("output")} == {"lhs1": "lhsValue1+rhsValue1"}
        driver.pipe_input("left", "lhs3", "lhsValue3", 0)
        assert {r.key: r.value for r in driver.read_output("output")} == {"lhs3": "lhsValue3+rhsValue3"}
        driver.pipe_input("left", "lhs1", "lhsValue4", 0)
        assert {r.key: r.value for r in driver.read_output("output")} == {"lhs1": "lhsValue4+rhsValue1"}


# -- KTableAggregateTest (testAggBasic, testCount) and TopologyTest (tableZeroArgCount...) --------


def test_grouped_table_aggregate_subtracts_old_values_and_adds_new_ones():
    builder = StreamsBuilder()
    (builder.table("topic1")
        .group_by(lambda key, value: (key, value))
        .aggregate(lambda: "0", lambda key, value, agg: f"{agg}+{value}", lambda key, value, agg: f"{agg}-{value}", name="topic1-Canonized")
        .to_stream().to("out"))
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        for key, value, ts in [("A", "1", 10), ("B", "2", 15), ("A", "3", 20), ("B", "4", 18), ("C", "5", 5), ("D", "6", 25), ("B", "7", 15), ("C", "8", 10)]:
            driver.pipe_input("topic1", key, value, ts)
        assert kv(driver.read_output("out")) == [
            ("A", "0+1", 10), ("B", "0+2", 15), ("A", "0+1-1+3", 20), ("B", "0+2-2+4", 18),
            ("C", "0+5", 5), ("D", "0+6", 25), ("B", "0+2-2+4-4+7", 18), ("C", "0+5-5+8", 10),
        ]


def test_grouped_table_count_moves_rows_between_groups():
    builder = StreamsBuilder()
    builder.table("count-test-input").group_by(lambda key, value: (value, value)).count(name="count").to_stream().to("out")
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        for key, value, ts in [("A", "green", 10), ("B", "green", 9), ("A", "blue", 12), ("C", "yellow", 15), ("D", "green", 11)]:
            driver.pipe_input("count-test-input", key, value, ts)
        assert kv(driver.read_output("out")) == [("green", 1, 10), ("green", 2, 10), ("green", 1, 12), ("blue", 1, 12), ("yellow", 1, 15), ("green", 2, 12)]
        count = driver.get_key_value_store("count")
        assert (count.get("green"), count.get("blue"), count.get("yellow"), count.get("red")) == (2, 1, 1, None)


GROUPED_TABLE_COUNT = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])
      --> KTABLE-SELECT-0000000003
      <-- KSTREAM-SOURCE-0000000001
    Processor: KTABLE-SELECT-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KTABLE-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)
      <-- KTABLE-SELECT-0000000003

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])
      --> KTABLE-AGGREGATE-0000000007
    Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-SOURCE-0000000006

"""


def test_grouped_table_count_describes_as_kafka():
    # TopologyTest.tableZeroArgCountShouldPreserveTopologyStructure
    builder = StreamsBuilder()
    builder.table("input-topic").group_by(lambda key, value: (None, value)).count()
    assert str(builder.build().describe()) == GROUPED_TABLE_COUNT


def test_grouped_table_reduce_and_a_selector_without_a_key():
    builder = StreamsBuilder()
    (builder.table("users")
        .group_by(lambda user, profile: (profile["region"], profile["age"]))
        .reduce(lambda total, age: total + age, lambda total, age: total - age, name="ages")
        .to_stream().to("out"))
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        driver.pipe_input("users", "u1", {"region": "eu", "age": 30}, 1)
        driver.pipe_input("users", "u2", {"region": "eu", "age": 40}, 2)
        driver.pipe_input("users", "u1", {"region": "us", "age": 31}, 3)
        driver.pipe_input("users", "u2", None, 4)
        driver.pipe_input("users", "u3", {"region": None, "age": 5}, 5)
        assert kv(driver.read_output("out")) == [("eu", 30, 1), ("eu", 70, 2), ("eu", 40, 3), ("us", 31, 3), ("eu", 0, 4)]
        (dead,) = driver.dead_letters()
        assert "null key" in dead.value["reason"]
