"""Scenarios on the Spark runtime, cut into micro-batches at random points with a restart (and
local stores thrown away) in the middle, against Kafka Streams' output: record for record, or the
same final result, as devtools/differential/spark_batches.py says per scenario."""

from __future__ import annotations

import random

import pytest

from deltastreams.devtools.differential.runner import judge
from deltastreams.devtools.differential.scenarios import draw_scenario
from deltastreams.devtools.differential.spark_batches import compare, contract, reference_outputs, run_batched

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 20261125
SCENARIOS = 10
SHAPES = ["stateless", "aggregate"]


def test_micro_batches_with_a_restart_give_kafka_streams_results(spark, oracle, tmp_path):
    checked, contracts, problems, index = 0, set(), [], 0
    while checked < SCENARIOS:
        scenario = draw_scenario(SEED, index, SHAPES)
        index += 1
        if contract(scenario) is None or judge(scenario, oracle, minimize=False).outcome == "different":
            continue  # the test-driver differential reports those
        run = run_batched(scenario, spark, random.Random(index), workdir=str(tmp_path))
        problem = compare(scenario, run.outputs, reference_outputs(scenario))
        if problem is not None:
            problems.append(f"{scenario.to_json()}\n{run.pieces} micro-batches, restart after {run.restarted_after}: {problem}")
        checked += 1
        contracts.add(contract(scenario))
    assert not problems, "\n\n".join(problems)
    assert contracts == {"record", "final"}, f"both contracts should be exercised, got {contracts}"
