"""The processing core without an engine: operators as objects, the sub-topology's input schema,
and the test driver's store lifecycle and read-only stores."""

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltastreams.state import ChangeLoggingStore, InMemoryKeyValueStore
from deltastreams.streams import ProcessingError, StreamsBuilder, TimeWindows, TopologyError, TopologyTestDriver
from deltastreams.streams._internal.processing.flow import Flow
from deltastreams.streams._internal.processing.operator import Operator, ProcessContext
from deltastreams.streams.core import TaskProcessor
from deltastreams.topology.graph import GraphBuilder
from deltastreams.topology.nodes import Node, SinkNode, SourceNode
from deltastreams.topology.records import REJECTED, VALUE


@dataclass(frozen=True)
class UpperCaseNode(Node):
    """A node kind the core does not know, as joins or the Processor API will be."""


class UpperCaseOperator(Operator, node=UpperCaseNode):
    def process(self, flow: Flow, context: ProcessContext) -> Flow:
        return flow.replace(values=pc.utf8_upper(flow.table.column(VALUE)))


@dataclass(frozen=True)
class UnknownNode(Node):
    pass


def single_chain(*middle: Node):
    graph = GraphBuilder()
    parent = graph.add(SourceNode("source", ("in",)))
    for node in middle:
        parent = graph.add(node, [parent])
    graph.add(SinkNode("sink", "out"), [parent])
    return graph.build()


def test_a_new_node_kind_runs_once_its_operator_class_exists():
    with TopologyTestDriver(single_chain(UpperCaseNode("upper"))) as driver:
        driver.pipe_input("in", "k", "shout", timestamp=1)
        assert [r.value for r in driver.read_output("out")] == ["SHOUT"]


def test_a_node_kind_without_an_operator_is_refused_when_the_task_is_built():
    with pytest.raises(TopologyError, match="the processing core cannot run UnknownNode nodes"):
        TopologyTestDriver(single_chain(UnknownNode("mystery")))


def test_one_node_type_cannot_get_two_operators():
    with pytest.raises(TypeError, match="UpperCaseNode already runs as UpperCaseOperator"):

        class Twice(Operator, node=UpperCaseNode):
            pass


def test_operators_declare_their_stores_and_the_topics_they_write():
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda k, v: True).group_by_key().count(name="counts").to_stream().to("out")
    topology = builder.build()
    task = TaskProcessor(topology, topology.subtopologies[0], 0, {"counts": ChangeLoggingStore(InMemoryKeyValueStore("counts"))})
    assert [(type(o).__name__, o.stores, o.emits) for o in task.operators] == [
        ("FilterOperator", (), ()),
        ("AggregateOperator", ("counts",), ()),
        ("ToStreamOperator", (), ()),
        ("SinkOperator", (), ("out",)),
    ]


def records(values, **extra):
    n = len(values)
    columns = {
        "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
        "timestamp": pa.array(range(1, n + 1), pa.int64()),
        "key": pa.array(["k"] * n),
        "value": pa.array(values),
    }
    return pa.table({**columns, **extra})


def test_with_an_entry_node_the_core_takes_that_nodes_output_and_runs_only_what_follows():
    # An engine ran the source and the filter (as Spark runs Column steps); the core must not
    # filter again, and records the engine marked bad become dead letters naming the entry node.
    builder = StreamsBuilder()
    builder.stream("in").filter(pc.field("value") > 10, name="big").map_values(lambda v: v * 2).to("out")
    topology = builder.build()
    task = TaskProcessor(topology, topology.subtopologies[0], 0, {}, entry="big")
    marks = pa.array([None, "big: predicate is null for this record (a missing field?)", None], pa.string())
    result = task.process({"in": records([1, 2, 3], **{REJECTED: marks})})
    assert result.outputs["out"].column("value").to_pylist() == [2, 6]
    dead = result.dead_letters.column("value").to_pylist()
    assert [(d["node"], d["source_offset"], d["reason"]) for d in dead] == [("big", 1, "big: predicate is null for this record (a missing field?)")]


def test_without_an_entry_every_step_runs_and_a_reason_column_is_optional():
    builder = StreamsBuilder()
    builder.stream("in").filter(pc.field("value") > 1).to("out")
    topology = builder.build()
    task = TaskProcessor(topology, topology.subtopologies[0], 0, {})
    assert task.process({"in": records([1, 2, 3])}).outputs["out"].column("value").to_pylist() == [2, 3]


def windowed_counts():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size(10).grace(100)).count(name="windows").to_stream().to("out")
    builder.stream("other").group_by_key().count(name="totals").to_stream().to("totals-out")
    return builder.build()


@pytest.mark.parametrize("backend", ["memory", "rocksdb"])
def test_stores_hold_exactly_their_committed_changelog_after_every_commit(backend):
    with TopologyTestDriver(windowed_counts(), store_backend=backend) as driver:
        for i, ts in enumerate([1, 12, 3, 25, 14]):
            driver.pipe_input("in", "ab"[i % 2], "v", timestamp=ts)
            replayed = {}
            for entry in driver.changelog("windows"):
                if entry.value is None:
                    replayed.pop(entry.key, None)
                else:
                    replayed[entry.key] = entry.value
            assert dict(driver.store_entries("windows")) == replayed


def test_read_only_stores_match_kafkas_key_value_and_window_stores():
    with TopologyTestDriver(windowed_counts()) as driver:
        driver.pipe_inputs("in", [("a", "v", 1), ("a", "v", 2), ("a", "v", 13)])
        driver.pipe_inputs("other", [("x", "v", 1), ("x", "v", 2)])
        windows = driver.get_window_store("windows")
        assert (windows.name, windows.fetch("a", 0), windows.fetch("a", 10), windows.fetch("b", 0)) == ("windows", 2, 1, None)
        totals = driver.get_key_value_store("totals")
        assert (totals.get("x"), totals.get("y")) == (2, None)
        with pytest.raises(TypeError, match="'windows' is a window store: use get_window_store"):
            driver.get_key_value_store("windows")
        with pytest.raises(TypeError, match="'totals' is not windowed: use get_key_value_store"):
            driver.get_window_store("totals")
        with pytest.raises(KeyError, match="no store named 'nope'"):
            driver.fetch("nope", "a")


def test_a_batch_that_fails_leaves_the_stores_as_the_last_commit_left_them():
    def add(aggregate, value):
        if value < 0:
            raise ValueError("negative")
        return aggregate + value

    builder = StreamsBuilder()
    builder.stream("in").group_by_key().reduce(add, name="sums").to_stream().to("out")
    with TopologyTestDriver(builder.build(), {"on_bad_record": "fail"}) as driver:
        driver.pipe_input("in", "a", 1, timestamp=1)
        with pytest.raises(ProcessingError, match="raised ValueError: negative"):
            driver.pipe_batch("in", [("a", 10, 2), ("b", 5, 3), ("a", -1, 4)])
        assert (driver.fetch("sums", "a"), driver.fetch("sums", "b")) == (1, None)
        driver.pipe_input("in", "a", 2, timestamp=5)
        assert [r.value for r in driver.read_output("out")] == [1, 3]


def test_a_rocksdb_test_driver_never_closed_leaves_no_state_directory(tmp_path, monkeypatch):
    import gc
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count().to_stream().to("out")
    driver = TopologyTestDriver(builder.build(), store_backend="rocksdb")
    assert len(list(tmp_path.glob("deltastreams-ttd-*"))) == 1
    del driver
    gc.collect()
    assert list(tmp_path.glob("deltastreams-ttd-*")) == []
