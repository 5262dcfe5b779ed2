"""Kafka Streams' own unit-test vectors for cogroup, run through our TopologyTestDriver.

From apache/kafka (commit 1eb7644349cb): ``CogroupedKStreamImplTest`` (the topology goldens and
every record vector), ``TimeWindowedCogroupedKStreamImplTest``,
``SessionWindowedCogroupedKStreamImplTest`` and ``SlidingWindowedCogroupedKStreamImplTest``. Kafka's
driver commits after every record, so the vectors hold with caching on and off; they run on both
store backends. ``MockAggregator.TOSTRING_ADDER`` is ``agg + "+" + value``, ``TOSTRING_REMOVER``
``agg + "-" + value``, ``MockInitializer.STRING_INIT`` ``"0"``, the session tests' merger
``agg1 + "+" + agg2``. Kafka's ``Named.as(n)`` is our ``processor_name=n``, its
``Materialized.as(s)`` our ``name=s``.

Not reproduced: the four ``...WithOptimization`` goldens (we have no topology optimization, so
repartition topics are never merged; see docs/differences-from-kafka.md), and Kafka's
null-argument tests become the build-time TopologyError checks below.
"""

from __future__ import annotations

import itertools

import pytest

from deltastreams.streams import SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, TopologyError, TopologyTestDriver


def string_aggregator(key, value, agg):
    return agg + value


def string_initializer():
    return ""


def string_sum_aggregator(key, value, agg):
    return agg + int(value)


def sum_aggregator(key, value, agg):
    return agg + value


def sum_initializer():
    return 0


def adder(key, value, agg):  # MockAggregator.TOSTRING_ADDER
    return f"{agg}+{value}"


def remover(key, value, agg):  # MockAggregator.TOSTRING_REMOVER
    return f"{agg}-{value}"


def string_init():  # MockInitializer.STRING_INIT
    return "0"


def session_merger(key, one, two):
    return f"{one}+{two}"


SETTINGS = list(itertools.product(["memory", "rocksdb"], [False, True]))


@pytest.fixture(params=SETTINGS, ids=[f"{backend}-{'cached' if caching else 'uncached'}" for backend, caching in SETTINGS])
def driver_for(request):
    backend, caching = request.param
    drivers = []

    def make(topology):
        driver = TopologyTestDriver(topology, {"caching": caching}, store_backend=backend)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()


def pipe(driver, topic, records):
    for key, value, timestamp in records:
        driver.pipe_input(topic, key, value, timestamp)


def read(driver, topic="output"):
    return [(r.key, r.value, r.timestamp) for r in driver.read_output(topic)]


def read_windowed(driver, topic="output"):
    return [((r.key, r.window_start, r.window_end), r.value, r.timestamp) for r in driver.read_output(topic)]


def two_streams(builder, first="one", second="two"):
    return builder.stream(first).group_by_key(), builder.stream(second).group_by_key()


def swap(key, value):
    return value, key


# -- CogroupedKStreamImplTest: argument checks -------------------------------------------------


def cogrouped():
    builder = StreamsBuilder()
    grouped = builder.stream("topic").group_by_key()
    return grouped, grouped.cogroup(adder)


def test_should_not_have_null_grouped_stream_or_aggregator_on_cogroup():
    """shouldThrowNPEInCogroupIfKGroupedStreamIsNull, shouldNotHaveNullAggregatorOnCogroup"""
    grouped, cogroup = cogrouped()
    with pytest.raises(TopologyError, match="KGroupedStream"):
        cogroup.cogroup(None, adder)
    with pytest.raises(TopologyError, match="aggregator"):
        cogroup.cogroup(grouped, None)
    with pytest.raises(TopologyError, match="aggregator"):
        grouped.cogroup(None)


def test_should_not_have_null_initializer_or_windows():
    """shouldNotHaveNullInitializerOnAggregate (and its Named / Materialized variants),
    shouldNotHaveNullWindowOnWindowedByTime / Session / Sliding, and the windowed tests'
    shouldNotHaveNullInitializerOnAggregate / shouldNotHaveNullSessionMergerOnAggregate"""
    _, cogroup = cogrouped()
    with pytest.raises(TopologyError, match="initializer"):
        cogroup.aggregate(None)
    with pytest.raises(TopologyError, match="initializer"):
        cogroup.aggregate(None, name="store", processor_name="name")
    with pytest.raises(TopologyError, match="windowed_by"):
        cogroup.windowed_by(None)
    with pytest.raises(TopologyError, match="initializer"):
        cogroup.windowed_by(TimeWindows.of_size(500)).aggregate(None)
    with pytest.raises(TopologyError, match="initializer"):
        cogroup.windowed_by(SlidingWindows.of_time_difference_and_grace(500, 2000)).aggregate(None)
    sessions = cogroup.windowed_by(SessionWindows.of_inactivity_gap_and_grace(100, 86_400_000))
    with pytest.raises(TopologyError, match="initializer"):
        sessions.aggregate(None, session_merger)
    with pytest.raises(TopologyError, match="merger"):
        sessions.aggregate(string_init, None)


# -- CogroupedKStreamImplTest: topologies ------------------------------------------------------


def test_should_name_processors_and_store_based_on_named_parameter():
    """shouldNameProcessorsAndStoreBasedOnNamedParameter"""
    builder = StreamsBuilder()
    one, two = two_streams(builder)
    one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer, name="store", processor_name="test").to_stream().to("output")
    assert str(builder.build().describe()) == NAMED_PROCESSORS_AND_STORE


def test_should_name_repartition_topic():
    """shouldNameRepartitionTopic"""
    builder = StreamsBuilder()
    stream1, stream2 = builder.stream("one"), builder.stream("two")
    one = stream1.map(swap).group_by_key(name="repartition-test")
    two = stream2.group_by_key()
    one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer).to_stream().to("output")
    assert str(builder.build().describe()) == NAMED_REPARTITION_TOPIC


def test_should_insert_repartition_topic_for_upstream_key_modification():
    """shouldInsertRepartitionsTopicForUpstreamKeyModification"""
    builder = StreamsBuilder()
    stream1, stream2 = builder.stream("one"), builder.stream("two")
    one = stream1.map(swap).group_by_key()
    two = stream2.group_by_key()
    one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer, name="store", processor_name="test").to_stream().to("output")
    assert str(builder.build().describe()) == UPSTREAM_KEY_MODIFICATION


def test_should_insert_repartition_topics_for_a_grouped_stream_reused_in_the_same_cogroups():
    """shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInSameCogroups"""
    builder = StreamsBuilder()
    stream1, stream2 = builder.stream("one"), builder.stream("two")
    one = stream1.map(swap).group_by_key()
    two = stream2.group_by_key()
    cogrouped_two = one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer)
    cogrouped_one = one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer)
    cogrouped_one.to_stream().to("output")
    cogrouped_two.to_stream().to("OUTPUT2")
    assert str(builder.build().describe()) == GROUPED_REUSED_IN_SAME_COGROUPS


def test_should_insert_repartition_topics_for_a_grouped_stream_reused_in_different_cogroups():
    """shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInDifferentCogroups"""
    builder = StreamsBuilder()
    stream1, stream2, stream3 = builder.stream("one"), builder.stream("two"), builder.stream("three")
    one = stream1.map(swap).group_by_key()
    two, three = stream2.group_by_key(), stream3.group_by_key()
    one.cogroup(string_aggregator).cogroup(three, string_aggregator).aggregate(string_initializer)
    one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer)
    assert str(builder.build().describe()) == GROUPED_REUSED_IN_DIFFERENT_COGROUPS


def test_should_insert_repartition_topics_for_a_grouped_stream_reused_by_a_plain_aggregation():
    """shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReused"""
    builder = StreamsBuilder()
    stream1, stream2 = builder.stream("one"), builder.stream("two")
    one = stream1.map(swap).group_by_key()
    two = stream2.group_by_key()
    one.cogroup(string_aggregator).cogroup(two, string_aggregator).aggregate(string_initializer)
    one.aggregate(string_initializer, string_aggregator)
    assert str(builder.build().describe()) == GROUPED_REUSED


def test_should_insert_one_repartition_topic_for_a_cogroup_aggregated_twice():
    """shouldInsertRepartitionsTopicForCogroupsUsedTwice: the second aggregation reuses the
    input's repartition topic (burning its names' counter values)"""
    builder = StreamsBuilder()
    one = builder.stream("one").map(swap).group_by_key(name="foo").cogroup(string_aggregator)
    one.aggregate(string_initializer)
    one.aggregate(string_initializer)
    assert str(builder.build().describe()) == COGROUPS_USED_TWICE


@pytest.mark.parametrize(
    ("windows", "merger"),
    [
        (TimeWindows.of_size(500), None),
        (SessionWindows.of_inactivity_gap_with_no_grace(1), session_merger),
        (SlidingWindows.of_time_difference_and_grace(500, 2000), None),
    ],
    ids=["time", "session", "sliding"],
)
def test_windowed_named_param_should_set_name(windows, merger):
    """TimeWindowedCogroupedKStreamImplTest / SessionWindowedCogroupedKStreamImplTest /
    SlidingWindowedCogroupedKStreamImplTest.namedParamShouldSetName"""
    builder = StreamsBuilder()
    windowed = builder.stream("topic").group_by_key().cogroup(adder).windowed_by(windows)
    if merger is None:
        windowed.aggregate(string_init, processor_name="foo")
    else:
        windowed.aggregate(string_init, merger, processor_name="foo")
    assert str(builder.build().describe()) == WINDOWED_NAMED


WINDOWED_NAMED = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> foo-cogroup-agg-0
    Processor: foo-cogroup-agg-0 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> foo-cogroup-merge
      <-- KSTREAM-SOURCE-0000000000
    Processor: foo-cogroup-merge (stores: [])
      --> none
      <-- foo-cogroup-agg-0

"""


# -- CogroupedKStreamImplTest: records ---------------------------------------------------------


def cogroup_of(builder, *aggregators, topics=("one", "two", "three")):
    grouped = [builder.stream(topic).group_by_key() for topic in topics[: len(aggregators)]]
    cogroup = grouped[0].cogroup(aggregators[0])
    for other, aggregator in zip(grouped[1:], aggregators[1:], strict=True):
        cogroup = cogroup.cogroup(other, aggregator)
    return cogroup


def test_should_cogroup_and_aggregate_single_kstreams(driver_for):
    """shouldCogroupAndAggregateSingleKStreams"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_aggregator).aggregate(string_initializer).to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "A", 0), ("k2", "B", 0), ("k2", "B", 0), ("k1", "A", 0)])
    assert read(driver) == [("k1", "A", 0), ("k2", "B", 0), ("k2", "BB", 0), ("k1", "AA", 0)]


def test_cogroup_handle_null_values(driver_for):
    """testCogroupHandleNullValues: a null value is skipped (and counted as dropped)"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_aggregator).aggregate(string_initializer).to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "A", 0), ("k2", "B", 0), ("k2", None, 0), ("k2", "B", 0), ("k1", "A", 0)])
    assert read(driver) == [("k1", "A", 0), ("k2", "B", 0), ("k2", "BB", 0), ("k1", "AA", 0)]
    assert driver.dropped_records == 1


def test_should_cogroup_and_aggregate_two_kstreams_with_distinct_keys(driver_for):
    """shouldCogroupAndAggregateTwoKStreamsWithDistinctKeys"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_aggregator, string_aggregator).aggregate(string_initializer).to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "A", 0), ("k1", "A", 1), ("k1", "A", 10), ("k1", "A", 100)])
    pipe(driver, "two", [("k2", "B", 100), ("k2", "B", 200), ("k2", "B", 1), ("k2", "B", 500), ("k2", "B", 500), ("k2", "B", 100)])
    assert read(driver) == [
        ("k1", "A", 0), ("k1", "AA", 1), ("k1", "AAA", 10), ("k1", "AAAA", 100),
        ("k2", "B", 100), ("k2", "BB", 200), ("k2", "BBB", 200), ("k2", "BBBB", 500), ("k2", "BBBBB", 500), ("k2", "BBBBBB", 500),
    ]


SHARED_KEYS_ONE = [("k1", "A", 0), ("k2", "A", 1), ("k1", "A", 10), ("k2", "A", 100)]
SHARED_KEYS_TWO = [("k2", "B", 100), ("k2", "B", 200), ("k1", "B", 1), ("k2", "B", 500), ("k1", "B", 500), ("k2", "B", 500), ("k3", "B", 500), ("k2", "B", 100)]
SHARED_KEYS_EXPECTED = [
    ("k1", "A", 0), ("k2", "A", 1), ("k1", "AA", 10), ("k2", "AA", 100), ("k2", "AAB", 100), ("k2", "AABB", 200),
    ("k1", "AAB", 10), ("k2", "AABBB", 500), ("k1", "AABB", 500), ("k2", "AABBBB", 500),
]


def test_should_cogroup_and_aggregate_two_kstreams_with_shared_keys(driver_for):
    """shouldCogroupAndAggregateTwoKStreamsWithSharedKeys (Kafka reads these ten records)"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_aggregator, string_aggregator).aggregate(string_initializer).to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", SHARED_KEYS_ONE)
    pipe(driver, "two", SHARED_KEYS_TWO)
    assert read(driver)[: len(SHARED_KEYS_EXPECTED)] == SHARED_KEYS_EXPECTED


def test_should_allow_different_output_type_in_cogroup(driver_for):
    """shouldAllowDifferentOutputTypeInCoGroup (Kafka reads these ten records)"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_sum_aggregator, string_sum_aggregator).aggregate(sum_initializer, name="store1").to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "1", 0), ("k2", "1", 1), ("k1", "1", 10), ("k2", "1", 100)])
    pipe(driver, "two", [("k2", "2", 100), ("k2", "2", 200), ("k1", "2", 1), ("k2", "2", 500), ("k1", "2", 500), ("k2", "3", 500), ("k3", "2", 500), ("k2", "2", 100)])
    expected = [("k1", 1, 0), ("k2", 1, 1), ("k1", 2, 10), ("k2", 2, 100), ("k2", 4, 100), ("k2", 6, 200), ("k1", 4, 10), ("k2", 8, 500), ("k1", 6, 500), ("k2", 11, 500)]
    assert read(driver)[: len(expected)] == expected


def test_should_cogroup_streams_with_different_input_types(driver_for):
    """shouldCoGroupStreamsWithDifferentInputTypes: strings on one input, ints on the other
    (Kafka reads these eleven records)"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_sum_aggregator, sum_aggregator).aggregate(sum_initializer, name="store1").to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "1", 0), ("k2", "1", 1), ("k1", "1", 10), ("k2", "1", 100)])
    pipe(driver, "two", [("k2", 2, 100), ("k2", 2, 200), ("k1", 2, 1), ("k2", 2, 500), ("k1", 2, 500), ("k2", 3, 500), ("k3", 2, 500), ("k2", 2, 100)])
    expected = [
        ("k1", 1, 0), ("k2", 1, 1), ("k1", 2, 10), ("k2", 2, 100), ("k2", 4, 100), ("k2", 6, 200), ("k1", 4, 10),
        ("k2", 8, 500), ("k1", 6, 500), ("k2", 11, 500), ("k3", 2, 500),
    ]
    assert read(driver)[: len(expected)] == expected
    assert driver.get_key_value_store("store1").get("k2") == 13


def test_cogroup_key_mixed_aggregators(driver_for):
    """testCogroupKeyMixedAggregators"""
    builder = StreamsBuilder()
    cogroup_of(builder, remover, adder).aggregate(string_init, name="store1").to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "1", 0), ("k2", "1", 1), ("k1", "1", 10), ("k2", "1", 100)])
    pipe(driver, "two", [("k1", "2", 500), ("k2", "2", 500), ("k1", "2", 500), ("k2", "2", 100)])
    assert read(driver) == [
        ("k1", "0-1", 0), ("k2", "0-1", 1), ("k1", "0-1-1", 10), ("k2", "0-1-1", 100),
        ("k1", "0-1-1+2", 500), ("k2", "0-1-1+2", 500), ("k1", "0-1-1+2+2", 500), ("k2", "0-1-1+2+2", 500),
    ]


def test_cogroup_with_three_grouped_streams(driver_for):
    """testCogroupWithThreeGroupedStreams"""
    builder = StreamsBuilder()
    cogroup_of(builder, string_aggregator, string_aggregator, string_aggregator).aggregate(string_initializer).to_stream().to("output")
    driver = driver_for(builder.build())
    pipe(driver, "one", [("k1", "A", 0), ("k2", "A", 1), ("k1", "A", 10), ("k2", "A", 100)])
    pipe(driver, "two", [("k2", "B", 100), ("k2", "B", 200), ("k1", "B", 1), ("k2", "B", 500)])
    pipe(driver, "three", [("k1", "B", 500), ("k2", "B", 500), ("k3", "B", 500), ("k2", "B", 100)])
    expected = [
        ("k1", "A", 0), ("k2", "A", 1), ("k1", "AA", 10), ("k2", "AA", 100), ("k2", "AAB", 100), ("k2", "AABB", 200),
        ("k1", "AAB", 10), ("k2", "AABBB", 500), ("k1", "AABB", 500), ("k2", "AABBBB", 500), ("k3", "B", 500),
    ]
    assert read(driver)[: len(expected)] == expected


def test_cogroup_with_ktable_ktable_inner_join(driver_for):
    """testCogroupWithKTableKTableInnerJoin: the cogroup's table is read by key like any
    aggregation's"""
    builder = StreamsBuilder()
    table1 = cogroup_of(builder, string_aggregator, string_aggregator).aggregate(string_initializer, name="store", processor_name="name")
    table2 = builder.table("three")
    table1.join(table2, lambda v1, v2: f"{v1}+{v2}").to_stream().to("output")
    driver = driver_for(builder.build())
    driver.pipe_input("one", "k1", "A", 5)
    driver.pipe_input("two", "k2", "B", 6)
    assert read(driver) == []
    driver.pipe_input("three", "k1", "C", 0)
    driver.pipe_input("three", "k2", "D", 10)
    assert read(driver) == [("k1", "A+C", 5), ("k2", "B+D", 10)]


# -- TimeWindowedCogroupedKStreamImplTest ------------------------------------------------------


def windowed_table(builder, windows, *, both=True, merger=None):
    """Kafka's setup: ``topic`` with TOSTRING_ADDER, ``topic2`` with TOSTRING_REMOVER (only
    ``topic`` when not ``both``), windowed and aggregated from STRING_INIT, to ``output``."""
    grouped = builder.stream("topic").group_by_key()
    grouped2 = builder.stream("topic2").group_by_key()
    cogroup = grouped.cogroup(adder)
    if both:
        cogroup = cogroup.cogroup(grouped2, remover)
    windowed = cogroup.windowed_by(windows)
    table = windowed.aggregate(string_init) if merger is None else windowed.aggregate(string_init, merger)
    table.to_stream().to("output")
    return builder.build()


def window_values(driver):
    return [(key, value, ts) for (key, _, _), value, ts in read_windowed(driver)]


MIXED_INPUT_ONE = [("k1", "A", 0), ("k2", "A", 0), ("k2", "A", 1), ("k1", "A", 2)]


def test_time_window_aggregate_test_streams_test(driver_for):
    """TimeWindowedCogroupedKStreamImplTest.timeWindowAggregateTestStreamsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), TimeWindows.of_size(500)))
    pipe(driver, "topic", MIXED_INPUT_ONE + [("k1", "B", 3), ("k2", "B", 3), ("k2", "B", 4), ("k1", "B", 4)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k2", "0+A", 0), ("k2", "0+A+A", 1), ("k1", "0+A+A", 2),
        ("k1", "0+A+A+B", 3), ("k2", "0+A+A+B", 3), ("k2", "0+A+A+B+B", 4), ("k1", "0+A+A+B+B", 4),
    ]


def test_time_window_mix_aggregators_test(driver_for):
    """TimeWindowedCogroupedKStreamImplTest.timeWindowMixAggregatorsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), TimeWindows.of_size(500)))
    pipe(driver, "topic", MIXED_INPUT_ONE)
    pipe(driver, "topic2", [("k1", "B", 3), ("k2", "B", 3), ("k2", "B", 4), ("k1", "B", 4)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k2", "0+A", 0), ("k2", "0+A+A", 1), ("k1", "0+A+A", 2),
        ("k1", "0+A+A-B", 3), ("k2", "0+A+A-B", 3), ("k2", "0+A+A-B-B", 4), ("k1", "0+A+A-B-B", 4),
    ]


def test_time_window_aggregate_many_windows_test(driver_for):
    """TimeWindowedCogroupedKStreamImplTest.timeWindowAggregateManyWindowsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), TimeWindows.of_size(500), both=False))
    pipe(driver, "topic", [("k1", "A", 0), ("k2", "A", 499), ("k2", "A", 500), ("k1", "A", 500)])
    assert read_windowed(driver) == [
        (("k1", 0, 500), "0+A", 0), (("k2", 0, 500), "0+A", 499), (("k2", 500, 1000), "0+A", 500), (("k1", 500, 1000), "0+A", 500),
    ]


def test_time_window_aggregate_overlapping_windows_test(driver_for):
    """TimeWindowedCogroupedKStreamImplTest.timeWindowAggregateOverlappingWindowsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), TimeWindows.of_size(500).advance_by(200), both=False))
    pipe(driver, "topic", [("k1", "A", 0), ("k2", "A", 0), ("k1", "B", 250), ("k2", "B", 250), ("k2", "A", 500), ("k1", "A", 500)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k2", "0+A", 0), ("k1", "0+A+B", 250), ("k1", "0+B", 250), ("k2", "0+A+B", 250), ("k2", "0+B", 250),
        ("k2", "0+B+A", 500), ("k2", "0+A", 500), ("k1", "0+B+A", 500), ("k1", "0+A", 500),
    ]


def test_time_window_mix_aggregators_many_windows_test(driver_for):
    """TimeWindowedCogroupedKStreamImplTest.timeWindowMixAggregatorsManyWindowsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), TimeWindows.of_size(500)))
    pipe(driver, "topic", MIXED_INPUT_ONE)
    pipe(driver, "topic2", [("k1", "B", 3), ("k2", "B", 3), ("k2", "B", 501), ("k1", "B", 501)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k2", "0+A", 0), ("k2", "0+A+A", 1), ("k1", "0+A+A", 2),
        ("k1", "0+A+A-B", 3), ("k2", "0+A+A-B", 3), ("k2", "0-B", 501), ("k1", "0-B", 501),
    ]


# -- SessionWindowedCogroupedKStreamImplTest ---------------------------------------------------

SESSIONS_WITH_GRACE = SessionWindows.of_inactivity_gap_and_grace(100, 86_400_000)


def test_session_window_aggregate_test(driver_for):
    """SessionWindowedCogroupedKStreamImplTest.sessionWindowAggregateTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), SessionWindows.of_inactivity_gap_with_no_grace(500), both=False, merger=session_merger))
    pipe(driver, "topic", [("k1", "A", 0), ("k2", "A", 0), ("k1", "B", 599), ("k2", "B", 607)])
    assert window_values(driver) == [("k1", "0+A", 0), ("k2", "0+A", 0), ("k1", "0+B", 599), ("k2", "0+B", 607)]


def test_session_window_aggregate_2_test(driver_for):
    """SessionWindowedCogroupedKStreamImplTest.sessionWindowAggregate2Test"""
    driver = driver_for(windowed_table(StreamsBuilder(), SessionWindows.of_inactivity_gap_with_no_grace(500), both=False, merger=session_merger))
    pipe(driver, "topic", [("k1", "A", 0), ("k1", "A", 0), ("k2", "B", 599), ("k1", "B", 607)])
    assert window_values(driver) == [("k1", "0+A", 0), ("k1", "0+0+A+A", 0), ("k2", "0+B", 599), ("k1", "0+B", 607)]


def test_session_window_aggregate_test_2_streams_test(driver_for):
    """SessionWindowedCogroupedKStreamImplTest.sessionWindowAggregateTest2StreamsTest: merged
    sessions are forwarded as deletes, timed at their end"""
    driver = driver_for(windowed_table(StreamsBuilder(), SESSIONS_WITH_GRACE, merger=session_merger))
    pipe(driver, "topic", [("k1", "A", 0), ("k1", "A", 84), ("k1", "A", 113), ("k1", "A", 199), ("k1", "B", 300), ("k2", "B", 301), ("k2", "B", 400), ("k1", "B", 400)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k1", None, 0), ("k1", "0+0+A+A", 84), ("k1", None, 84), ("k1", "0+0+0+A+A+A", 113), ("k1", None, 113),
        ("k1", "0+0+0+0+A+A+A+A", 199), ("k1", "0+B", 300), ("k2", "0+B", 301), ("k2", None, 301), ("k2", "0+0+B+B", 400),
        ("k1", None, 300), ("k1", "0+0+B+B", 400),
    ]


def test_session_window_mix_aggregators_test(driver_for):
    """SessionWindowedCogroupedKStreamImplTest.sessionWindowMixAggregatorsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), SESSIONS_WITH_GRACE, merger=session_merger))
    pipe(driver, "topic", MIXED_INPUT_ONE)
    pipe(driver, "topic2", [("k1", "B", 3), ("k2", "B", 3), ("k2", "B", 444), ("k1", "B", 444)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k2", "0+A", 0), ("k2", None, 0), ("k2", "0+0+A+A", 1), ("k1", None, 0), ("k1", "0+0+A+A", 2),
        ("k1", None, 2), ("k1", "0+0+0+A+A-B", 3), ("k2", None, 1), ("k2", "0+0+0+A+A-B", 3), ("k2", "0-B", 444), ("k1", "0-B", 444),
    ]


def test_session_window_mix_aggregators_many_windows_test(driver_for):
    """SessionWindowedCogroupedKStreamImplTest.sessionWindowMixAggregatorsManyWindowsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), SESSIONS_WITH_GRACE, merger=session_merger))
    pipe(driver, "topic", MIXED_INPUT_ONE)
    pipe(driver, "topic2", [("k1", "B", 3), ("k2", "B", 500), ("k2", "B", 501), ("k1", "B", 501)])
    assert window_values(driver) == [
        ("k1", "0+A", 0), ("k2", "0+A", 0), ("k2", None, 0), ("k2", "0+0+A+A", 1), ("k1", None, 0), ("k1", "0+0+A+A", 2),
        ("k1", None, 2), ("k1", "0+0+0+A+A-B", 3), ("k2", "0-B", 500), ("k2", None, 500), ("k2", "0+0-B-B", 501), ("k1", "0-B", 501),
    ]


# -- SlidingWindowedCogroupedKStreamImplTest ---------------------------------------------------

SLIDING = SlidingWindows.of_time_difference_and_grace(500, 2000)


def test_sliding_window_aggregate_streams_test(driver_for):
    """SlidingWindowedCogroupedKStreamImplTest.slidingWindowAggregateStreamsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), SLIDING))
    pipe(driver, "topic", [("k1", "A", 500), ("k2", "A", 500), ("k2", "A", 501), ("k1", "A", 502), ("k1", "B", 503), ("k2", "B", 503), ("k2", "B", 504), ("k1", "B", 504)])
    expected = [
        ("k1", 0, "0+A", 500), ("k2", 0, "0+A", 500),
        ("k2", 501, "0+A", 501), ("k2", 1, "0+A+A", 501),
        ("k1", 501, "0+A", 502), ("k1", 2, "0+A+A", 502),
        ("k1", 501, "0+A+B", 503), ("k1", 503, "0+B", 503), ("k1", 3, "0+A+A+B", 503),
        ("k2", 501, "0+A+B", 503), ("k2", 502, "0+B", 503), ("k2", 3, "0+A+A+B", 503),
        ("k2", 502, "0+B+B", 504), ("k2", 501, "0+A+B+B", 504), ("k2", 504, "0+B", 504), ("k2", 4, "0+A+A+B+B", 504),
        ("k1", 503, "0+B+B", 504), ("k1", 501, "0+A+B+B", 504), ("k1", 504, "0+B", 504), ("k1", 4, "0+A+A+B+B", 504),
    ]
    assert read_windowed(driver) == [((key, start, start + 500), value, ts) for key, start, value, ts in expected]


def test_sliding_window_aggregate_overlapping_windows_test(driver_for):
    """SlidingWindowedCogroupedKStreamImplTest.slidingWindowAggregateOverlappingWindowsTest"""
    driver = driver_for(windowed_table(StreamsBuilder(), SLIDING, both=False))
    pipe(driver, "topic", [("k1", "A", 500), ("k2", "A", 500), ("k1", "B", 750), ("k2", "B", 750), ("k2", "A", 1000), ("k1", "A", 1000)])
    assert window_values(driver) == [
        ("k1", "0+A", 500), ("k2", "0+A", 500), ("k1", "0+B", 750), ("k1", "0+A+B", 750), ("k2", "0+B", 750), ("k2", "0+A+B", 750),
        ("k2", "0+B+A", 1000), ("k2", "0+A", 1000), ("k2", "0+A+B+A", 1000), ("k1", "0+B+A", 1000), ("k1", "0+A", 1000), ("k1", "0+A+B+A", 1000),
    ]


# -- Kafka's topology goldens (CogroupedKStreamImplTest) ---------------------------------------

NAMED_PROCESSORS_AND_STORE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> test-cogroup-agg-0
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> test-cogroup-agg-1
    Processor: test-cogroup-agg-0 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000000
    Processor: test-cogroup-agg-1 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000001
    Processor: test-cogroup-merge (stores: [])
      --> KTABLE-TOSTREAM-0000000005
      <-- test-cogroup-agg-0, test-cogroup-agg-1
    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- test-cogroup-merge
    Sink: KSTREAM-SINK-0000000006 (topic: output)
      <-- KTABLE-TOSTREAM-0000000005

"""

NAMED_REPARTITION_TOPIC = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> repartition-test-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: repartition-test-repartition-filter (stores: [])
      --> repartition-test-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: repartition-test-repartition-sink (topic: repartition-test-repartition)
      <-- repartition-test-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Source: repartition-test-repartition-source (topics: [repartition-test-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- repartition-test-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> KTABLE-TOSTREAM-0000000010
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: KTABLE-TOSTREAM-0000000010 (stores: [])
      --> KSTREAM-SINK-0000000011
      <-- COGROUPKSTREAM-MERGE-0000000009
    Sink: KSTREAM-SINK-0000000011 (topic: output)
      <-- KTABLE-TOSTREAM-0000000010

"""

UPSTREAM_KEY_MODIFICATION = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> store-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: store-repartition-filter (stores: [])
      --> store-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: store-repartition-sink (topic: store-repartition)
      <-- store-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> test-cogroup-agg-1
    Source: store-repartition-source (topics: [store-repartition])
      --> test-cogroup-agg-0
    Processor: test-cogroup-agg-0 (stores: [store])
      --> test-cogroup-merge
      <-- store-repartition-source
    Processor: test-cogroup-agg-1 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000001
    Processor: test-cogroup-merge (stores: [])
      --> KTABLE-TOSTREAM-0000000009
      <-- test-cogroup-agg-0, test-cogroup-agg-1
    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- test-cogroup-merge
    Sink: KSTREAM-SINK-0000000010 (topic: output)
      <-- KTABLE-TOSTREAM-0000000009

"""

GROUPED_REUSED_IN_SAME_COGROUPS = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-filter, COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008, COGROUPKSTREAM-AGGREGATE-0000000015
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000014
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-AGGREGATE-0000000014 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010])
      --> COGROUPKSTREAM-MERGE-0000000016
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000015 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010])
      --> COGROUPKSTREAM-MERGE-0000000016
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> KTABLE-TOSTREAM-0000000019
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: COGROUPKSTREAM-MERGE-0000000016 (stores: [])
      --> KTABLE-TOSTREAM-0000000017
      <-- COGROUPKSTREAM-AGGREGATE-0000000014, COGROUPKSTREAM-AGGREGATE-0000000015
    Processor: KTABLE-TOSTREAM-0000000017 (stores: [])
      --> KSTREAM-SINK-0000000018
      <-- COGROUPKSTREAM-MERGE-0000000016
    Processor: KTABLE-TOSTREAM-0000000019 (stores: [])
      --> KSTREAM-SINK-0000000020
      <-- COGROUPKSTREAM-MERGE-0000000009
    Sink: KSTREAM-SINK-0000000018 (topic: output)
      <-- KTABLE-TOSTREAM-0000000017
    Sink: KSTREAM-SINK-0000000020 (topic: OUTPUT2)
      <-- KTABLE-TOSTREAM-0000000019

"""

GROUPED_REUSED_IN_DIFFERENT_COGROUPS = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000003
    Processor: KSTREAM-MAP-0000000003 (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter, COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-sink
      <-- KSTREAM-MAP-0000000003
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-sink
      <-- KSTREAM-MAP-0000000003
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter

  Sub-topology: 1
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000015
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000016
    Processor: COGROUPKSTREAM-AGGREGATE-0000000015 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011])
      --> COGROUPKSTREAM-MERGE-0000000017
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000016 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011])
      --> COGROUPKSTREAM-MERGE-0000000017
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000017 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000015, COGROUPKSTREAM-AGGREGATE-0000000016

  Sub-topology: 2
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Source: KSTREAM-SOURCE-0000000002 (topics: [three])
      --> COGROUPKSTREAM-AGGREGATE-0000000009
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004])
      --> COGROUPKSTREAM-MERGE-0000000010
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000009 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004])
      --> COGROUPKSTREAM-MERGE-0000000010
      <-- KSTREAM-SOURCE-0000000002
    Processor: COGROUPKSTREAM-MERGE-0000000010 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000008, COGROUPKSTREAM-AGGREGATE-0000000009

"""

GROUPED_REUSED = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter, KSTREAM-FILTER-0000000013
      <-- KSTREAM-SOURCE-0000000000
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Processor: KSTREAM-FILTER-0000000013 (stores: [])
      --> KSTREAM-SINK-0000000012
      <-- KSTREAM-MAP-0000000002
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter
    Sink: KSTREAM-SINK-0000000012 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition)
      <-- KSTREAM-FILTER-0000000013

  Sub-topology: 1
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008

  Sub-topology: 2
    Source: KSTREAM-SOURCE-0000000014 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition])
      --> KSTREAM-AGGREGATE-0000000011
    Processor: KSTREAM-AGGREGATE-0000000011 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000010])
      --> none
      <-- KSTREAM-SOURCE-0000000014

"""

COGROUPS_USED_TWICE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001 (stores: [])
      --> foo-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: foo-repartition-filter (stores: [])
      --> foo-repartition-sink
      <-- KSTREAM-MAP-0000000001
    Sink: foo-repartition-sink (topic: foo-repartition)
      <-- foo-repartition-filter

  Sub-topology: 1
    Source: foo-repartition-source (topics: [foo-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000006, COGROUPKSTREAM-AGGREGATE-0000000012
    Processor: COGROUPKSTREAM-AGGREGATE-0000000006 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> COGROUPKSTREAM-MERGE-0000000007
      <-- foo-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000012 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000008])
      --> COGROUPKSTREAM-MERGE-0000000013
      <-- foo-repartition-source
    Processor: COGROUPKSTREAM-MERGE-0000000007 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000006
    Processor: COGROUPKSTREAM-MERGE-0000000013 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000012

"""
