import pytest

from deltastreams.jobs.pageview import build_topology
from deltastreams.streams import StreamsBuilder, Suppressed, TimeWindows

# What Kafka Streams prints for the paper's Figure 3 topology (unnamed operators).
PAGEVIEW = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [pageview-events])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-MAP-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> KSTREAM-FILTER-0000000006
      <-- KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-MAP-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- KSTREAM-FILTER-0000000006

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000007 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> KSTREAM-AGGREGATE-0000000004
    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-SOURCE-0000000007
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-SINK-0000000009
      <-- KSTREAM-AGGREGATE-0000000004
    Sink: KSTREAM-SINK-0000000009 (topic: pageview-windowed-counts)
      <-- KTABLE-TOSTREAM-0000000008

"""

SINGLE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [clicks])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-AGGREGATE-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-SUPPRESS-0000000004
      <-- KSTREAM-FILTER-0000000001
    Processor: KTABLE-SUPPRESS-0000000004 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000005])
      --> KTABLE-TOSTREAM-0000000006
      <-- KSTREAM-AGGREGATE-0000000003
    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000007
      <-- KTABLE-SUPPRESS-0000000004
    Sink: KSTREAM-SINK-0000000007 (topic: click-counts)
      <-- KTABLE-TOSTREAM-0000000006

"""


def test_pageview_topology_describes_as_kafka_with_two_subtopologies():
    assert str(build_topology().describe()) == PAGEVIEW


def test_key_preserving_topology_is_one_subtopology_without_repartition():
    builder = StreamsBuilder()
    (
        builder.stream("clicks")
        .filter(lambda k, v: v > 0)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(1000))
        .count()
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .to("click-counts")
    )
    topology = builder.build()
    assert str(topology.describe()) == SINGLE
    assert len(topology.subtopologies) == 1 and not topology.internal_topics


def test_named_aggregation_names_store_changelog_and_repartition_topic():
    builder = StreamsBuilder()
    builder.stream("in").map(lambda k, v: (v, k)).group_by_key().count(name="per-value").to_stream().to("out")
    topology = builder.build()
    assert set(topology.stores) == {"per-value"}
    assert topology.stores["per-value"].changelog_topic("app") == "app-per-value-changelog"
    assert topology.internal_topics == {"per-value-repartition"}
    assert topology.physical_topic("app", "per-value-repartition") == "app-per-value-repartition"
    text = str(topology.describe())
    assert "Sink: per-value-repartition-sink (topic: per-value-repartition)" in text
    assert "Source: per-value-repartition-source (topics: [per-value-repartition])" in text


def test_group_by_names_the_repartition_topic_after_the_grouping():
    builder = StreamsBuilder()
    builder.stream("in").group_by(lambda k, v: v["c"], name="by-c").count().to_stream().to("out")
    topology = builder.build()
    assert topology.internal_topics == {"by-c-repartition"}
    assert [s.source_topics for s in topology.subtopologies] == [("in",), ("by-c-repartition",)]
    assert topology.subtopologies[0].sink_topics == ("by-c-repartition",)
    # The named key selector still takes counter value 1 (Kafka's NamedInternal burns it).
    assert topology.subtopologies[1].stores == ("KSTREAM-AGGREGATE-STATE-STORE-0000000002",)


def test_branches_list_successors_larger_subtree_first():
    builder = StreamsBuilder()
    source = builder.stream("in")
    source.to("raw")
    source.filter(lambda k, v: True).map_values(lambda v: v).to("clean")
    lines = str(builder.build().describe()).splitlines()
    assert lines[2:4] == [
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [in])",
        "      --> KSTREAM-FILTER-0000000002, KSTREAM-SINK-0000000001",
    ]


# KStreamKTableJoinTest.shouldReuseRepartitionTopicWithGeneratedName: two unnamed joins of one
# re-keyed stream share its repartition topic (each still takes three counter values).
STREAM_TABLE_JOINS_GENERATED = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> KSTREAM-MAP-0000000007
    Processor: KSTREAM-MAP-0000000007 (stores: [])
      --> KSTREAM-FILTER-0000000009
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-MAP-0000000007
    Sink: KSTREAM-SINK-0000000008 (topic: KSTREAM-MAP-0000000007-repartition)
      <-- KSTREAM-FILTER-0000000009

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000010 (topics: [KSTREAM-MAP-0000000007-repartition])
      --> KSTREAM-JOIN-0000000011, KSTREAM-JOIN-0000000016
    Processor: KSTREAM-JOIN-0000000011 (stores: [topic2-STATE-STORE-0000000001])
      --> KSTREAM-SINK-0000000012
      <-- KSTREAM-SOURCE-0000000010
    Processor: KSTREAM-JOIN-0000000016 (stores: [topic3-STATE-STORE-0000000004])
      --> KSTREAM-SINK-0000000017
      <-- KSTREAM-SOURCE-0000000010
    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])
      --> KTABLE-SOURCE-0000000003
    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])
      --> KTABLE-SOURCE-0000000006
    Sink: KSTREAM-SINK-0000000012 (topic: out-one)
      <-- KSTREAM-JOIN-0000000011
    Sink: KSTREAM-SINK-0000000017 (topic: out-two)
      <-- KSTREAM-JOIN-0000000016
    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-SOURCE-0000000005

"""

# KStreamKTableJoinTest.shouldCreateRepartitionTopicsWithUserProvidedName.
STREAM_TABLE_JOINS_NAMED = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> KSTREAM-MAP-0000000007
    Processor: KSTREAM-MAP-0000000007 (stores: [])
      --> first-join-repartition-filter, second-join-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: first-join-repartition-filter (stores: [])
      --> first-join-repartition-sink
      <-- KSTREAM-MAP-0000000007
    Processor: second-join-repartition-filter (stores: [])
      --> second-join-repartition-sink
      <-- KSTREAM-MAP-0000000007
    Sink: first-join-repartition-sink (topic: first-join-repartition)
      <-- first-join-repartition-filter
    Sink: second-join-repartition-sink (topic: second-join-repartition)
      <-- second-join-repartition-filter

  Sub-topology: 1
    Source: first-join-repartition-source (topics: [first-join-repartition])
      --> first-join
    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])
      --> KTABLE-SOURCE-0000000003
    Processor: first-join (stores: [topic2-STATE-STORE-0000000001])
      --> KSTREAM-SINK-0000000012
      <-- first-join-repartition-source
    Sink: KSTREAM-SINK-0000000012 (topic: out-one)
      <-- first-join
    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000002

  Sub-topology: 2
    Source: second-join-repartition-source (topics: [second-join-repartition])
      --> second-join
    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])
      --> KTABLE-SOURCE-0000000006
    Processor: second-join (stores: [topic3-STATE-STORE-0000000004])
      --> KSTREAM-SINK-0000000017
      <-- second-join-repartition-source
    Sink: KSTREAM-SINK-0000000017 (topic: out-two)
      <-- second-join
    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-SOURCE-0000000005

"""


@pytest.mark.parametrize("named", [False, True])
def test_stream_table_joins_of_a_rekeyed_stream_match_kafka(named):
    builder = StreamsBuilder()
    stream_a = builder.stream("topic")
    table_b = builder.table("topic2")
    table_c = builder.table("topic3")
    rekeyed = stream_a.map(lambda k, v: (v, k))
    rekeyed.join(table_b, lambda v1, v2: v1 + v2, name="first-join" if named else None).to("out-one")
    rekeyed.join(table_c, lambda v1, v2: v1 + v2, name="second-join" if named else None).to("out-two")
    expected = STREAM_TABLE_JOINS_NAMED if named else STREAM_TABLE_JOINS_GENERATED
    assert str(builder.build().describe()) == expected
