"""Kafka Streams' own unit-test vectors for split/branch, merge, flat_map_values, foreach and
print, run through our TopologyTestDriver.

From apache/kafka (commit 1eb7644349cb, ``streams/src/test/.../kstream/internals``):
``KStreamSplitTest`` (testKStreamSplit, testResultingMap, testBranchingWithNoTerminalOperation),
``KStreamImplTest`` (shouldMergeTwoStreams, shouldMergeMultipleStreams),
``KStreamFlatMapValuesTest`` (testFlatMapValues, testFlatMapValuesWithKeys), ``KStreamForeachTest``
(testForeach) and ``KStreamPrintTest`` (testPrintStreamWithProvidedKeyValueMapper, through the
DSL rather than the processor directly). Kafka's ``testTypeVariance`` tests check Java generics
and have no counterpart.
"""

from __future__ import annotations

import pytest

from deltastreams.conf.errors import TopologyError
from deltastreams.streams import Branched, Printed, StreamsBuilder, TopologyTestDriver

SPLIT_KEYS = (-1, 0, 1, 2, 3, 4, 5, 6, 7)


def is_even(key, value):
    return key % 2 == 0


def is_multiple_of_three(key, value):
    return key % 3 == 0


def is_multiple_of_five(key, value):
    return key % 5 == 0


def is_multiple_of_seven(key, value):
    return key % 7 == 0


def is_negative(key, value):
    return key < 0


def drive_split(builder):
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for key in SPLIT_KEYS:
        driver.pipe_input("topic", key, f"V{key}", 0)
    return driver


def values(driver, topic):
    return [r.value for r in driver.read_output(topic)]


def test_split_test_kstream_split():
    """KStreamSplitTest.testKStreamSplit"""
    builder = StreamsBuilder()
    branches = (
        builder.stream("topic")
        .split()
        .branch(is_even, Branched.with_consumer(lambda ks: ks.to("x2")))
        .branch(is_multiple_of_three, Branched.with_consumer(lambda ks: ks.to("x3")))
        .branch(is_multiple_of_five, Branched.with_consumer(lambda ks: ks.to("x5")))
        .no_default_branch()
    )
    assert branches == {}
    driver = drive_split(builder)
    assert values(driver, "x2") == ["V0", "V2", "V4", "V6"]
    assert values(driver, "x3") == ["V3"]
    assert values(driver, "x5") == ["V5"]


def test_split_test_resulting_map():
    """KStreamSplitTest.testResultingMap"""
    builder = StreamsBuilder()
    branches = (
        builder.stream("topic")
        .split(name="foo-")
        .branch(is_even, Branched.with_name("bar"))  # "foo-bar"
        .branch(is_multiple_of_three, Branched.with_consumer(lambda ks: None))  # no entry: a consumer
        .branch(is_multiple_of_five, Branched.with_function(lambda ks: None))  # no entry: None returned
        .branch(is_negative, Branched.with_function(lambda ks: ks))  # "foo-4"
        .branch(is_multiple_of_seven)  # "foo-5": named by position
        .default_branch()  # "foo-0"
    )
    assert sorted(branches) == ["foo-0", "foo-4", "foo-5", "foo-bar"]
    for name, stream in branches.items():
        stream.to(name)
    driver = drive_split(builder)
    assert values(driver, "foo-bar") == ["V0", "V2", "V4", "V6"]
    assert values(driver, "foo-4") == ["V-1"]
    assert values(driver, "foo-5") == ["V7"]
    assert values(driver, "foo-0") == ["V1"]


def test_split_test_branching_with_no_terminal_operation():
    """KStreamSplitTest.testBranchingWithNoTerminalOperation"""
    builder = StreamsBuilder()
    (
        builder.stream("topic")
        .split()
        .branch(is_even, Branched.with_consumer(lambda ks: ks.to("output")))
        .branch(is_multiple_of_five, Branched.with_consumer(lambda ks: ks.to("output")))
    )
    driver = drive_split(builder)
    assert values(driver, "output") == ["V0", "V2", "V4", "V5", "V6"]


def test_a_closed_split_takes_no_more_branches():
    builder = StreamsBuilder()
    split = builder.stream("topic").split()
    split.default_branch()
    with pytest.raises(TopologyError, match="no branch can follow"):
        split.branch(is_even)


def test_impl_test_should_merge_two_streams():
    """KStreamImplTest.shouldMergeTwoStreams"""
    builder = StreamsBuilder()
    builder.stream("topic-1").merge(builder.stream("topic-2")).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for topic, key, value in (("topic-1", "A", "aa"), ("topic-2", "B", "bb"), ("topic-2", "C", "cc"), ("topic-1", "D", "dd")):
        driver.pipe_input(topic, key, value, 0)
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [("A", "aa", 0), ("B", "bb", 0), ("C", "cc", 0), ("D", "dd", 0)]


def test_impl_test_should_merge_multiple_streams():
    """KStreamImplTest.shouldMergeMultipleStreams"""
    builder = StreamsBuilder()
    sources = [builder.stream(f"topic-{i}") for i in range(1, 5)]
    sources[0].merge(sources[1]).merge(sources[2]).merge(sources[3]).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    piped = [(1, "A", "aa", 1), (2, "B", "bb", 9), (3, "C", "cc", 2), (4, "D", "dd", 8), (4, "E", "ee", 3), (3, "F", "ff", 7), (2, "G", "gg", 4), (1, "H", "hh", 6)]
    for topic, key, value, timestamp in piped:
        driver.pipe_input(f"topic-{topic}", key, value, timestamp)
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [(k, v, t) for _, k, v, t in piped]


@pytest.mark.parametrize(
    ("mapper", "expected"),
    [
        (lambda value: [f"v{value}", f"V{value}"], ["v0", "V0", "v1", "V1", "v2", "V2", "v3", "V3"]),  # testFlatMapValues
        (lambda key, value: [f"v{value}", f"k{key}"], ["v0", "k0", "v1", "k1", "v2", "k2", "v3", "k3"]),  # testFlatMapValuesWithKeys
    ],
)
def test_flat_map_values_test(mapper, expected):
    """KStreamFlatMapValuesTest.testFlatMapValues and testFlatMapValuesWithKeys"""
    builder = StreamsBuilder()
    builder.stream("topic").flat_map_values(mapper).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for key in range(4):
        driver.pipe_input("topic", key, key, 0)
    out = driver.read_output("out")
    assert [r.value for r in out] == expected
    assert [(r.key, r.timestamp) for r in out] == [(k, 0) for k in range(4) for _ in range(2)]


def test_foreach_test_foreach():
    """KStreamForeachTest.testForeach"""
    seen = []
    builder = StreamsBuilder()
    builder.stream("topic").foreach(lambda key, value: seen.append((key * 2, value.upper())))
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for key, value in ((0, "zero"), (1, "one"), (2, "two"), (3, "three")):
        driver.pipe_input("topic", key, value, 0)
    assert seen == [(0, "ZERO"), (2, "ONE"), (4, "TWO"), (6, "THREE")]


def test_print_test_print_stream_with_provided_key_value_mapper(tmp_path):
    """KStreamPrintTest.testPrintStreamWithProvidedKeyValueMapper"""
    path = tmp_path / "printed.txt"
    builder = StreamsBuilder()
    printed = Printed.to_file(str(path)).with_label("test-stream").with_key_value_mapper(lambda key, value: f"{key}, {value}")
    builder.stream("topic").print(printed)
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for key, value in ((0, "zero"), (1, "one"), (2, "two"), (3, "three")):
        driver.pipe_input("topic", key, value, 0)
    assert path.read_text().splitlines() == ["[test-stream]: 0, zero", "[test-stream]: 1, one", "[test-stream]: 2, two", "[test-stream]: 3, three"]


def test_print_defaults_to_the_processor_name_and_java_nulls(capsys):
    builder = StreamsBuilder()
    builder.stream("topic").print()
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("topic", "a", None, 0)
    assert capsys.readouterr().out == "[KSTREAM-PRINTER-0000000001]: a, null\n"
