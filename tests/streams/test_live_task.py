"""The rule that keeps a task's operators alive between batches (no Spark): reused only when they
hold exactly the run the driver committed, closed and built again otherwise."""

from __future__ import annotations

import pyarrow as pa

from deltastreams.state import ChangeLoggingStore, InMemoryKeyValueStore
from deltastreams.streams import StreamsBuilder
from deltastreams.streams._internal.processing.task import TaskProcessor
from deltastreams.streams._internal.runtime.live_task import LiveTask
from deltastreams.streams.processor import Processor, Stores

KEY = ("topology", 0)


def _task_builder(calls: list[str]):
    class Noting(Processor):
        def init(self, context):
            calls.append("init")

        def process(self, record):
            pass

        def close(self):
            calls.append("close")

    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("s")))
    builder.stream("in", key_type=pa.string(), value_type=pa.string()).process(Noting, "s", name="noting")
    topology = builder.build()
    sub = topology.subtopologies[0]
    stores = {name: ChangeLoggingStore(InMemoryKeyValueStore(name)) for name in sub.stores}
    records = pa.table({"partition": pa.array([0], pa.int32()), "offset": [0], "timestamp": [1], "key": ["k"], "value": ["v"]})

    def run(live: LiveTask, committed: str | None, key=KEY) -> str:
        processor = live.begin(key, committed, lambda: TaskProcessor(topology, sub, 0, stores))
        processor.process({"in": records})
        for store in stores.values():
            store.abort()
        return live.done()

    return run


def test_operators_are_kept_while_their_runs_commit_and_rebuilt_after_anything_else():
    calls: list[str] = []
    run, live = _task_builder(calls), LiveTask()
    first = run(live, None)
    second = run(live, first)
    third = run(live, second)
    assert calls == ["init"] and (live.builds, live.reuses) == (1, 2)
    assert len({first, second, third}) == 3

    run(live, third)  # processed, but the driver abandons it: it still says `third` committed
    run(live, third)
    assert calls == ["init", "close", "init"]

    run(live, "a run elsewhere")  # the task ran on another machine meanwhile
    assert calls[-2:] == ["close", "init"]


def test_a_run_that_processed_nothing_keeps_the_committed_run_and_a_new_topology_rebuilds():
    calls: list[str] = []
    run, live = _task_builder(calls), LiveTask()
    committed = run(live, None)
    assert live.unchanged(committed) == committed
    assert live.unchanged("another run") is None
    run(live, committed, key=("another topology", 0))
    assert calls == ["init", "close", "init"]
    live.discard()
    assert calls[-1] == "close"
