"""The click-attribution example (a stream-stream left join) on Spark: the attributed
impressions equal the independent pandas computation, each once, with and without kill -9."""

from __future__ import annotations

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs import clicks
from deltastreams.devtools.harness import enrich as enrich_harness
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark


def test_attributions_equal_the_reference_once_every_window_has_closed(spark, tmp_path):
    root = str(tmp_path)
    config = StreamsConfig.load({"application_id": clicks.APPLICATION_ID, "root": root, "commit_interval_ms": 100, "max_records_per_batch": 1})
    clicks.generate(root, rounds=2, per_round=300, seed=4)
    StreamsApp(clicks.build_topology(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    waiting = clicks.reference_pairs(root) - clicks.read_results(root)
    assert waiting and all(value.endswith("|None") for _, value in waiting)  # open windows hold them back
    clicks.generate(root, rounds=1, per_round=300, seed=4)
    clicks.close(root)
    StreamsApp(clicks.build_topology(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
    expected = clicks.reference_pairs(root)
    assert clicks.read_results(root) == expected
    assert sum(1 for _, value in expected if value.endswith("|None")) > 50  # unclicked impressions went out


@pytest.mark.slow
def test_kills_leave_the_attributions_exactly_once(tmp_path):
    # deltastreams.devtools.harness.enrich --job clicks at small scale: a kill at each commit point in turn.
    with open(tmp_path / "harness.log", "a") as log:
        kills, violations = enrich_harness.run(str(tmp_path), trials=4, seed=3, log=log, job="clicks")
    assert sum(n for point, n in kills.items() if point != "finished before the kill") >= 3, kills
    assert violations + enrich_harness.check(str(tmp_path), "clicks") == []
