"""User processors live across micro-batches on Spark, as in Kafka: ``init`` runs once per task
while its batches commit, again (after ``close``) when a batch is abandoned or a new driver
starts, and the results stay those of the independent computation."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import BatchTimedOutError
from deltastreams.jobs import dedup
from deltastreams.streams import StreamsBuilder
from deltastreams.streams._internal.runtime.committer import Committer
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.processor import Stores

pytestmark = pytest.mark.spark


def _topology(calls: Path):
    """The dedup example's processor, writing each ``init``, ``close`` and punctuation (with its
    task) to ``calls``: the task hosts are other processes."""

    class RecordedDedup(dedup.Dedup):
        def init(self, context):
            super().init(context)
            self.task_id = context.task_id
            self._note("init")

        def purge(self, stream_time):
            super().purge(stream_time)
            self._note("punctuate")

        def close(self):
            self._note("close")

        def _note(self, what):
            with open(calls, "a") as f:
                f.write(f"{what} {self.task_id}\n")

    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store(dedup.STORE)))
    events = builder.stream(dedup.INPUT_TOPIC, key_type=pa.string(), value_type=pa.string())
    events.process(RecordedDedup, dedup.STORE, name="dedup").to(dedup.OUTPUT_TOPIC, key_column="event_id", value_column="payload")
    return builder.build()


def _calls(path: Path) -> Counter:
    return Counter(tuple(line.split()) for line in path.read_text().splitlines()) if path.exists() else Counter()


def test_init_runs_once_per_task_across_batches_and_again_after_an_abandoned_batch(spark, tmp_path, monkeypatch):
    root, calls = str(tmp_path / "root"), tmp_path / "calls.txt"
    config = StreamsConfig.load({"application_id": dedup.APPLICATION_ID, "root": root, "commit_interval_ms": 100, "max_records_per_batch": 1})
    tasks = ("0_0", "0_1")

    # Five committed batches, one 2-second slice each: one init per task, punctuations between.
    dedup.generate(root, rounds=1, per_round=100, seed=4)
    app = StreamsApp(_topology(calls), config, spark=spark)
    app.run(until_caught_up=True, timeout_s=240)
    assert sum(1 for m in app.history if m.subtopology == 0) >= 5
    first = _calls(calls)
    assert {t: first["init", t] for t in tasks} == {t: 1 for t in tasks}
    assert all(first["punctuate", t] >= 2 for t in tasks), first  # scheduled once, in that init
    assert {t: first["close", t] for t in tasks} == {t: 1 for t in tasks}, first  # when the application stopped

    # Started again, the application builds them again (init). Its second batch is abandoned
    # after its tasks ran (as when it took too long): their processors are ahead of the stores
    # now, so they are closed and built again from the stores when the batch runs again.
    commits = {"n": 0}
    check_age = Committer.check_age

    def abandon_the_second_batch(self, written):
        commits["n"] += 1
        if commits["n"] == 2:
            raise BatchTimedOutError("abandoned by the test, and run again")
        return check_age(self, written)

    monkeypatch.setattr(Committer, "check_age", abandon_the_second_batch)
    dedup.generate(root, rounds=1, per_round=100, seed=4)
    StreamsApp(_topology(calls), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    assert commits["n"] >= 6  # the abandoned batch, then all five slices committed
    second = _calls(calls) - first
    assert {t: second["init", t] for t in tasks} == {t: 2 for t in tasks}, second
    assert {t: second["close", t] for t in tasks} == {t: 2 for t in tasks}, second  # the abandoned ones, then at the stop

    assert dedup.read_results(root) == dedup.reference_events(root)
