"""Kafka Streams' own unit-test vectors for the stream-global-table join, run through our
TopologyTestDriver with caching off.

From apache/kafka (commit 1eb7644349cb, ``streams/src/test/.../kstream/internals``):
``KStreamGlobalKTableJoinTest`` and ``KStreamGlobalKTableLeftJoinTest``, non-versioned store. The
stream's values are ``"<prefix><i>[,FKey<i>]"``; the key selector takes the second token (None
without one); ``MockValueJoiner.TOSTRING_JOINER`` is ``value1 + "+" + value2``. The stream topic
auto-advances its timestamps by 1 ms from 0 (``Duration.ofMillis(1L)``), the table topic's
timestamps play no part. ``shouldNotRequireCopartitioning`` is an internal of Kafka's topology
builder; the Spark test ``tests/streams/test_spark_global_tables.py`` joins topics of different
partition counts instead. Versioned-store variants are not reproduced (no versioned stores here).
"""

from __future__ import annotations

import pytest

from deltastreams.streams import StreamsBuilder, TopologyTestDriver

KEYS = (0, 1, 2, 3)


def tostring_joiner(value1, value2):
    return f"{value1}+{'null' if value2 is None else value2}"


def key_mapper(key, value):
    tokens = value.split(",")
    return tokens[1] if len(tokens) > 1 else None


class GlobalJoinFixture:
    def __init__(self, left: bool):
        builder = StreamsBuilder()
        stream = builder.stream("streamTopic")
        table = builder.global_table("globalTableTopic")
        (stream.left_join if left else stream.join)(table, key_mapper, tostring_joiner).to("out")
        self.topology = builder.build()
        self.driver = TopologyTestDriver(self.topology, {"caching": False})
        self.clock = 0

    def push_to_stream(self, count, prefix, include_foreign_key, include_null_key=False):
        for i in range(count):
            value = f"{prefix}{KEYS[i]}" + (f",FKey{KEYS[i]}" if include_foreign_key else "")
            key = None if include_null_key and i == 0 else KEYS[i]
            self.driver.pipe_input("streamTopic", key, value, self.clock)
            self.clock += 1

    def push_to_global_table(self, count, prefix):
        for i in range(count):
            self.driver.pipe_input("globalTableTopic", f"FKey{KEYS[i]}", f"{prefix}{KEYS[i]}", 0)

    def push_null_values_to_global_table(self, count):
        for i in range(count):
            self.driver.pipe_input("globalTableTopic", f"FKey{KEYS[i]}", None, 0)

    def results(self):
        return [(r.key, r.value, r.timestamp) for r in self.driver.read_output("out")]


@pytest.fixture
def inner():
    fixture = GlobalJoinFixture(left=False)
    yield fixture
    fixture.driver.close()


@pytest.fixture
def left():
    fixture = GlobalJoinFixture(left=True)
    yield fixture
    fixture.driver.close()


# -- KStreamGlobalKTableJoinTest ----------------------------------------------------------------


def test_inner_should_not_join_with_empty_global_table_on_stream_updates(inner):
    inner.push_to_stream(2, "X", True)
    assert inner.results() == []


def test_inner_should_not_join_on_global_table_updates(inner):
    inner.push_to_stream(2, "X", True)
    assert inner.results() == []
    inner.push_to_global_table(2, "Y")
    assert inner.results() == []
    inner.push_to_stream(4, "X", True)
    assert inner.results() == [(0, "X0,FKey0+Y0", 2), (1, "X1,FKey1+Y1", 3)]
    inner.push_to_global_table(4, "YY")
    assert inner.results() == []
    inner.push_to_stream(4, "X", True)
    assert inner.results() == [(0, "X0,FKey0+YY0", 6), (1, "X1,FKey1+YY1", 7), (2, "X2,FKey2+YY2", 8), (3, "X3,FKey3+YY3", 9)]
    inner.push_to_global_table(4, "YYY")
    assert inner.results() == []


def test_inner_should_join_only_if_match_found_on_stream_updates(inner):
    inner.push_to_global_table(2, "Y")
    assert inner.results() == []
    inner.push_to_stream(4, "X", True)
    assert inner.results() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1)]


def test_inner_should_clear_global_table_entry_on_null_value_updates(inner):
    inner.push_to_global_table(4, "Y")
    inner.push_to_stream(4, "X", True)
    assert inner.results() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1), (2, "X2,FKey2+Y2", 2), (3, "X3,FKey3+Y3", 3)]
    inner.push_null_values_to_global_table(2)
    assert inner.results() == []
    inner.push_to_stream(4, "XX", True)
    assert inner.results() == [(2, "XX2,FKey2+Y2", 6), (3, "XX3,FKey3+Y3", 7)]


def test_inner_should_not_join_on_null_key_mapper_values(inner):
    inner.push_to_global_table(4, "Y")
    inner.push_to_stream(4, "XXX", False)
    assert inner.results() == []
    assert inner.driver.dropped_records == 4


def test_inner_should_join_on_null_key_with_non_null_key_mapper_values(inner):
    inner.push_to_global_table(2, "Y")
    inner.push_to_stream(4, "X", True, True)
    assert inner.results() == [(None, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1)]


# -- KStreamGlobalKTableLeftJoinTest ------------------------------------------------------------


def test_left_should_not_join_with_empty_global_table_on_stream_updates(left):
    left.push_to_stream(2, "X", True)
    assert left.results() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]


def test_left_should_not_join_on_global_table_updates(left):
    left.push_to_stream(2, "X", True)
    assert left.results() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]
    left.push_to_global_table(2, "Y")
    assert left.results() == []
    left.push_to_stream(4, "X", True)
    assert left.results() == [(0, "X0,FKey0+Y0", 2), (1, "X1,FKey1+Y1", 3), (2, "X2,FKey2+null", 4), (3, "X3,FKey3+null", 5)]
    left.push_to_global_table(4, "YY")
    assert left.results() == []
    left.push_to_stream(4, "X", True)
    assert left.results() == [(0, "X0,FKey0+YY0", 6), (1, "X1,FKey1+YY1", 7), (2, "X2,FKey2+YY2", 8), (3, "X3,FKey3+YY3", 9)]
    left.push_to_global_table(4, "YYY")
    assert left.results() == []


def test_left_should_join_regardless_if_match_found_on_stream_updates(left):
    left.push_to_global_table(2, "Y")
    left.push_to_stream(4, "X", True)
    assert left.results() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1), (2, "X2,FKey2+null", 2), (3, "X3,FKey3+null", 3)]


def test_left_should_clear_global_table_entry_on_null_value_updates(left):
    left.push_to_global_table(4, "Y")
    left.push_to_stream(4, "X", True)
    assert left.results() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1), (2, "X2,FKey2+Y2", 2), (3, "X3,FKey3+Y3", 3)]
    left.push_null_values_to_global_table(2)
    assert left.results() == []
    left.push_to_stream(4, "XX", True)
    assert left.results() == [(0, "XX0,FKey0+null", 4), (1, "XX1,FKey1+null", 5), (2, "XX2,FKey2+Y2", 6), (3, "XX3,FKey3+Y3", 7)]


def test_left_should_not_join_on_null_key_mapper_values(left):
    left.push_to_global_table(4, "Y")
    left.push_to_stream(4, "XXX", False)
    assert left.results() == []


def test_left_should_join_on_null_key_with_non_null_key_mapper_values(left):
    left.push_to_global_table(4, "Y")
    left.push_to_stream(4, "X", True, True)
    assert left.results() == [(None, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1), (2, "X2,FKey2+Y2", 2), (3, "X3,FKey3+Y3", 3)]


# -- describe -----------------------------------------------------------------------------------


def test_a_global_table_is_described_as_kafka_describes_a_global_store(inner):
    # Kafka's TopologyDescription for a global store (InternalTopologyBuilder.GlobalStore.toString):
    # numbered with the sub-topologies, generates no tasks; the join lists no store, and even an
    # inner join is a KSTREAM-LEFTJOIN (KStreamImpl.globalTableJoin; Kafka 4.3.1 says so).
    assert str(inner.topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [streamTopic])\n"
        "      --> KSTREAM-LEFTJOIN-0000000004\n"
        "    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Sink: KSTREAM-SINK-0000000005 (topic: out)\n"
        "      <-- KSTREAM-LEFTJOIN-0000000004\n"
        "\n"
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        "    Source: KSTREAM-SOURCE-0000000002 (topics: [globalTableTopic])\n"
        "      --> KTABLE-SOURCE-0000000003\n"
        "    Processor: KTABLE-SOURCE-0000000003 (stores: [globalTableTopic-STATE-STORE-0000000001])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000002\n"
    )
    assert [s.id for s in inner.topology.subtopologies] == [0]  # the global store runs in task 0_p
