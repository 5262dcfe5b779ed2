"""The deduplication example (a user processor with a store and a punctuator) on Spark: the
unique events equal the independent computation, each once, with and without kill -9, for the
record-at-a-time processor and the vectorised (batch) one."""

from __future__ import annotations

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs import dedup
from deltastreams.devtools.harness import enrich as enrich_harness
from deltastreams.sinks import Topic
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("vectorised", [False, True], ids=["per-record", "vectorised"])
def test_unique_events_equal_the_reference(spark, tmp_path, vectorised):
    root = str(tmp_path)
    config = StreamsConfig.load({"application_id": dedup.APPLICATION_ID, "root": root, "commit_interval_ms": 100, "max_records_per_batch": 1})
    for _ in range(2):
        dedup.generate(root, rounds=1, per_round=300, seed=6)
        StreamsApp(dedup.build_topology(vectorised), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    expected = dedup.reference_events(root)
    assert dedup.read_results(root) == expected
    assert sum(expected.values()) < Topic.open(root, dedup.INPUT_TOPIC).read().num_rows  # duplicates were dropped
    assert len({event_id for event_id, _ in expected}) < sum(expected.values())  # copies after the time-to-live passed


@pytest.mark.slow
@pytest.mark.parametrize("job", ["dedup", "dedup-vectorised"])
def test_kills_leave_the_unique_events_exactly_once(tmp_path, job):
    with open(tmp_path / "harness.log", "a") as log:
        kills, violations = enrich_harness.run(str(tmp_path), trials=4, seed=5, log=log, job=job)
    assert sum(n for point, n in kills.items() if point != "finished before the kill") >= 3, kills
    assert violations + enrich_harness.check(str(tmp_path), job) == []
