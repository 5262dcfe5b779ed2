"""The Processor API through the test driver: punctuation as Kafka's TopologyTestDriverTest
expects it (shouldPunctuateOnStreamsTime, shouldPunctuateOnWallClockTime: same inputs, same
punctuation times), user stores that survive restarts (rebuilt from their changelogs), schedules
that continue across restarts, process_values keeping keys, and clear errors."""

from __future__ import annotations

import pickle

import pytest

from deltastreams.conf.errors import TopologyError
from deltastreams.streams import StreamsBuilder, TopologyTestDriver
from deltastreams.streams.processor import Processor, PunctuationType, Record, Stores


class Punctuating(Processor):
    """Kafka's MockProcessor with a MockPunctuator: records the times it punctuated at."""

    def __init__(self, interval, kind, log):
        self.interval, self.kind, self.log = interval, kind, log

    def init(self, context):
        context.schedule(self.interval, self.kind, self.log.append)

    def process(self, record):
        pass


def punctuating_driver(kind, log):
    builder = StreamsBuilder()
    builder.stream("source1").process(lambda: Punctuating(10, kind, log))
    return TopologyTestDriver(builder.build(), {"caching": False})


def test_topology_test_driver_test_should_punctuate_on_streams_time():
    """TopologyTestDriverTest.shouldPunctuateOnStreamsTime"""
    log: list[int] = []
    driver = punctuating_driver(PunctuationType.STREAM_TIME, log)
    expected: list[int] = []
    for timestamp, fires in ((42, True), (42, False), (51, True), (52, False), (61, True), (65, False), (71, True), (72, False), (95, True)):
        driver.pipe_input("source1", "key1", "value1", timestamp)
        if fires:
            expected.append(timestamp)
        assert log == expected


def test_topology_test_driver_test_should_punctuate_on_wall_clock_time():
    """TopologyTestDriverTest.shouldPunctuateOnWallClockTime"""
    log: list[int] = []
    driver = punctuating_driver(PunctuationType.WALL_CLOCK_TIME, log)
    expected: list[int] = []
    for advance, fires_at in ((5, None), (9, 14), (1, None), (20, 35), (5, 40)):
        driver.advance_wall_clock(advance)
        if fires_at is not None:
            expected.append(fires_at)
        assert log == expected


TTL = 100


class Dedup(Processor):
    """Forward a record unless its key was forwarded less than TTL ago; purge old ids."""

    def init(self, context):
        self.context = context
        self.seen = context.get_state_store("seen-ids")
        context.schedule(50, PunctuationType.STREAM_TIME, self.purge)

    def process(self, record):
        seen_at = self.seen.get(record.key)
        if seen_at is None or record.timestamp - seen_at >= TTL:
            self.seen.put(record.key, record.timestamp)
            self.context.forward(record.with_value(record.value.upper()))

    def purge(self, stream_time):
        for key, seen_at in list(self.seen.all()):
            if seen_at <= stream_time - TTL:
                self.seen.delete(key)


def dedup_topology():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("seen-ids")))
    builder.stream("events").process(Dedup, "seen-ids").to("unique")
    return builder.build()


def test_a_processor_with_a_store_and_a_punctuator_survives_restarts():
    inputs = [("a", "x", 0), ("a", "y", 10), ("b", "z", 20), ("a", "w", 120), ("b", "v", 60), ("c", "u", 200), ("b", "t", 230)]
    # At stream time 120 the purge forgets b (seen at 20), so the late b at 60 passes; at 200 it
    # forgets b again (seen at 60), so b at 230 passes too.
    expected = [("a", "X", 0), ("b", "Z", 20), ("a", "W", 120), ("b", "V", 60), ("c", "U", 200), ("b", "T", 230)]
    for restart_every in (None, 1, 2):
        driver = TopologyTestDriver(dedup_topology(), {"caching": False}, store_backend="rocksdb")
        for i, record in enumerate(inputs):
            driver.pipe_input("events", *record)
            if restart_every and i % restart_every == 0:
                driver.restart()
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("unique")] == expected
        stored = sorted(pickle.loads(value) for _, value in driver.store_entries("seen-ids"))
        assert stored == [("a", 120), ("b", 230), ("c", 200)]  # purged: b at 20, then b at 60
        driver.close()


def test_the_schedule_store_keeps_stream_time_punctuation_across_restarts():
    log: list[int] = []
    builder = StreamsBuilder()
    builder.stream("source1").process(lambda: Punctuating(10, PunctuationType.STREAM_TIME, log))
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    for timestamp in (42, 45, 51):
        driver.pipe_input("source1", "k", "v", timestamp)
        driver.restart()
    assert log == [42, 51]  # a fresh schedule would have fired at 45 again


class KeyChanger(Processor):
    def process(self, record):
        self.context.forward(Record("other-key", record.value, record.timestamp))


def test_process_values_keeps_keys_and_process_may_change_them():
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.process(KeyChanger).to("changed")
    stream.process_values(KeyChanger).to("kept")
    driver = TopologyTestDriver(builder.build(), {"caching": False})
    driver.pipe_input("in", "k", "v", 1)
    assert [(r.key, r.value) for r in driver.read_output("changed")] == [("other-key", "v")]
    assert driver.read_output("kept") == []
    assert "keeps the key" in driver.dead_letters()[0].value["reason"]


def test_a_processor_names_stores_that_exist():
    builder = StreamsBuilder()
    with pytest.raises(TopologyError, match="no store named 'missing'"):
        builder.stream("in").process(Dedup, "missing")


def test_a_processors_connected_stores_are_described_as_kafka_does():
    assert str(dedup_topology().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [events])\n"
        "      --> KSTREAM-PROCESSOR-0000000001\n"
        "    Processor: KSTREAM-PROCESSOR-0000000001 (stores: [seen-ids])\n"
        "      --> KSTREAM-SINK-0000000002\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Sink: KSTREAM-SINK-0000000002 (topic: unique)\n"
        "      <-- KSTREAM-PROCESSOR-0000000001\n\n"
    )
