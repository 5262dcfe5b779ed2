"""Record headers, as Kafka keeps them: a record's headers go with everything computed from it
(stateless steps, repartitions, aggregations, joins), a processor reads them on its records and
may set others on what it forwards; topics created with ``headers=True`` store them. Kafka's
ProcessorTopologyTest shouldConsiderHeaders / shouldAddHeaders and
KStreamKStreamOuterJoinTest.testShouldForwardCurrentHeaders through the test driver; the same
on Spark and Delta topics."""

from __future__ import annotations

import pyarrow as pa
import pytest

from conf import StreamsConfig
from sinks import Topic, create_topic
from sinks.serde import headers_array
from streams import JoinWindows, StreamsBuilder, TopologyTestDriver
from streams.app import StreamsApp
from streams.processor import Processor, Record

HEADERS = (("key", b"value"),)


class Forwarding(Processor):
    def init(self, context):
        self.context = context

    def process(self, record):
        self.context.forward(record)


class AddHeader(Processor):
    """Kafka's AddHeaderProcessor: forwards each record with one more header."""

    def init(self, context):
        self.context = context

    def process(self, record):
        self.context.forward(record.with_headers(record.headers + HEADERS))


def outputs(driver, topic):
    return [(r.key, r.value, r.headers, r.timestamp) for r in driver.read_output(topic)]


def test_processor_topology_test_should_consider_headers():
    """ProcessorTopologyTest.shouldConsiderHeaders"""
    builder = StreamsBuilder()
    builder.stream("input-topic-1").process(Forwarding).to("output-topic-1")
    driver = TopologyTestDriver(builder.build())
    for i, ts in ((1, 10), (2, 20), (3, 30)):
        driver.pipe_input("input-topic-1", f"key{i}", f"value{i}", ts, headers=HEADERS)
    assert outputs(driver, "output-topic-1") == [("key1", "value1", HEADERS, 10), ("key2", "value2", HEADERS, 20), ("key3", "value3", HEADERS, 30)]


def test_processor_topology_test_should_add_headers():
    """ProcessorTopologyTest.shouldAddHeaders"""
    builder = StreamsBuilder()
    builder.stream("input-topic-1").process(AddHeader).to("output-topic-1")
    driver = TopologyTestDriver(builder.build())
    for i, ts in ((1, 10), (2, 20), (3, 30)):
        driver.pipe_input("input-topic-1", f"key{i}", f"value{i}", ts)
    assert outputs(driver, "output-topic-1") == [("key1", "value1", HEADERS, 10), ("key2", "value2", HEADERS, 20), ("key3", "value3", HEADERS, 30)]


def test_kstream_kstream_outer_join_test_should_forward_current_headers():
    """KStreamKStreamOuterJoinTest.testShouldForwardCurrentHeaders: the non-joined records an
    outer join emits carry the headers of the record whose stream time closed their window"""
    builder = StreamsBuilder()
    left, right = builder.stream("topic1"), builder.stream("topic2")
    left.outer_join(right, lambda a, b: f"{a}+{b}", JoinWindows.of_time_difference_and_grace(100, 10)).to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("topic1", 0, "A0", 0, headers=[("h", b"\x01")])
    driver.pipe_input("topic2", 1, 10, 0, headers=[("h", b"\x02")])
    driver.pipe_input("topic2", 3, 100, 211, headers=[("h", b"\x03")])
    assert outputs(driver, "out") == [(1, "None+10", (("h", b"\x03"),), 0), (0, "A0+None", (("h", b"\x03"),), 0)]


class ReadsHeaders(Processor):
    def init(self, context):
        self.context = context

    def process(self, record):
        self.context.forward(Record(record.key, f"{record.value}:{record.header('trace')}", record.timestamp))


def test_headers_follow_the_record_they_came_from():
    """Stateless steps, a repartition and an aggregation keep the input record's headers; a
    processor reads them, and a record it makes anew has none (Kafka's ``new Record``)."""
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.map_values(str.upper).filter(lambda k, v: True).to("upper")
    stream.map(lambda k, v: (v, k)).group_by_key().count().to_stream().to("rekeyed-counts")
    stream.process(ReadsHeaders).to("read")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("in", "a", "x", 1, headers=[("trace", b"t1"), ("trace", b"t2")])
    driver.pipe_input("in", "b", "x", 2)
    both = (("trace", b"t1"), ("trace", b"t2"))
    assert outputs(driver, "upper") == [("a", "X", both, 1), ("b", "X", (), 2)]
    assert outputs(driver, "rekeyed-counts") == [("x", 1, both, 1), ("x", 2, (), 2)]
    assert outputs(driver, "read") == [("a", "x:b't2'", (), 1), ("b", "x:None", (), 2)]


def test_a_record_rejects_headers_that_are_not_bytes():
    with pytest.raises(TypeError):
        Record("k", "v", 1, [("h", "not bytes")])


@pytest.mark.spark
def test_headers_travel_through_delta_topics_on_spark(spark, tmp_path):
    """On Spark: a topic created with headers feeds them to a processor and through a
    repartition; the output topics, created by the job, store them."""
    root = str(tmp_path)
    create_topic(root, "in", partitions=2, key_type=pa.string(), value_type=pa.string(), headers=True)
    rows = [(f"k{i}", f"v{i % 3}", i, None if i % 4 == 0 else [("trace", f"t{i}".encode())]) for i in range(40)]
    Topic.open(root, "in").append(pa.table({
        "key": [r[0] for r in rows], "value": [r[1] for r in rows], "timestamp": pa.array([r[2] for r in rows], pa.int64()),
        "headers": headers_array([r[3] for r in rows]),
    }))
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.map(lambda k, v: (v, k)).to("rekeyed")
    stream.process(AddHeader).to("tagged")
    config = StreamsConfig.load({"application_id": "headers", "root": root, "commit_interval_ms": 100})
    StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)

    def stored(topic):
        table = Topic.open(root, topic).read()
        headers = [() if h is None else tuple((e["key"], e["value"]) for e in h) for h in table["headers"].to_pylist()]
        return sorted(zip(table["key"].to_pylist(), table["value"].to_pylist(), headers, strict=True))

    own = {r[0]: () if r[3] is None else tuple(r[3]) for r in rows}
    assert stored("rekeyed") == sorted((r[1], r[0], own[r[0]]) for r in rows)
    assert stored("tagged") == sorted((r[0], r[1], own[r[0]] + HEADERS) for r in rows)
