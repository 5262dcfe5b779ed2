"""Record headers, as Kafka keeps them: a record's headers go with everything computed from it
(stateless steps, repartitions, aggregations, joins), a processor reads them on its records and
may set others on what it forwards; topics created with ``headers=True`` store them. Kafka's
ProcessorTopologyTest shouldConsiderHeaders / shouldAddHeaders and
KStreamKStreamOuterJoinTest.testShouldForwardCurrentHeaders through the test driver; the same
on Spark and Delta topics."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.sinks.serde import headers_array
from deltastreams.streams import BufferConfig, JoinWindows, SessionWindows, StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.processor import Processor, Record

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


def test_headers_set_by_a_processor_survive_a_key_change():
    """A processor's headers stay with its records through map/select_key, which rebuild the
    flow's columns (Kafka's records keep their headers through every stateless step)."""
    builder = StreamsBuilder()
    builder.stream("in").process(AddHeader).map(lambda k, v: (v, k)).select_key(lambda k, v: k + "!").to("out")
    driver = TopologyTestDriver(builder.build())
    driver.pipe_input("in", "a", "x", 1, headers=[("trace", b"t1")])
    assert outputs(driver, "out") == [("x!", "a", (("trace", b"t1"),) + HEADERS, 1)]


def _session_counts(caching: bool) -> list:
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 5)).count().to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": caching})
    driver.pipe_input("in", "a", "x", 10, headers=[("h", b"0")])
    driver.pipe_input("in", "a", "y", 12, headers=[("h", b"1")])
    return [(r.window_start, r.window_end, r.value, r.headers) for r in driver.read_output("out")]


def test_session_updates_carry_no_headers_without_caching():
    """Kafka's KStreamSessionWindowAggregate forwards each update (and each merged-away session's
    delete) as a new record, without headers; through its cache, a session's entry keeps the
    headers of the record that last wrote it (checked against Kafka 4.3.1's driver)."""
    assert _session_counts(caching=False) == [(10, 10, 1, ()), (10, 10, None, ()), (10, 12, 2, ())]
    assert _session_counts(caching=True) == [(10, 10, 1, (("h", b"0"),)), (10, 10, None, (("h", b"1"),)), (10, 12, 2, (("h", b"1"),))]


def test_suppress_forwards_the_buffered_revision_with_its_own_headers():
    """Kafka's suppress buffer keeps each revision's record context: what goes out carries the
    headers (and timestamp) of the latest revision buffered for its key, not those of the record
    whose stream time let it out."""
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 0)).count()
    counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("final")
    builder.stream("in2").group_by_key().count().suppress(Suppressed.until_time_limit(5, BufferConfig.unbounded())).to_stream().to("limited")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("in", "a", "x", 1, headers=[("h", b"1")])
    driver.pipe_input("in", "a", "x", 2, headers=[("h", b"2")])
    driver.pipe_input("in", "b", "x", 10)
    driver.pipe_input("in2", "a", "x", 1, headers=[("h", b"1")])
    driver.pipe_input("in2", "b", "x", 7, headers=[("h", b"7")])
    assert [(r.key, r.value, r.timestamp, r.headers) for r in driver.read_output("final")] == [("a", 2, 2, (("h", b"2"),))]
    assert [(r.key, r.value, r.timestamp, r.headers) for r in driver.read_output("limited")] == [("a", 1, 1, (("h", b"1"),))]


def test_suppress_keeps_a_merged_away_session_apart_from_the_session_it_became():
    """A session and the one it merged into share a start: suppress(until_time_limit) buffers
    them as two windows (Kafka's session key carries the end too), so the delete goes out."""
    builder = StreamsBuilder()
    sessions = builder.stream("in").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(3, 5)).count()
    sessions.suppress(Suppressed.until_time_limit(20, BufferConfig.unbounded())).to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for ts in (23, 24, 60):
        driver.pipe_input("in", "a", "x", ts)
    assert [(r.window_start, r.window_end, r.value, r.timestamp) for r in driver.read_output("out")] == [(23, 23, None, 23), (23, 24, 2, 24)]


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
