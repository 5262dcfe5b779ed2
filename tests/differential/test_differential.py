"""Random scenarios of every shape in the catalogue through Kafka Streams' TopologyTestDriver and
ours: the same records, record by record, and the same describe(), or a difference
docs/differences-from-kafka.md explains (checked: Kafka's output on the equivalent scenario
equals ours). A fixed seed, so a failure is reproducible; its minimal scenario is written to a
file ``python -m deltastreams.devtools.differential --replay`` takes. Longer runs: ``python -m deltastreams.devtools.differential``."""

from __future__ import annotations

import pytest

from deltastreams.devtools.differential.runner import judge, write_failure
from deltastreams.devtools.differential.scenarios import draw_scenario
from deltastreams.devtools.differential.shapes import SHAPES

SEED = 20261125
SCENARIOS_PER_SHAPE = 150


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_kafka_streams_and_deltastreams_give_the_same_records(shape, oracle, tmp_path):
    outcomes = {"same": 0, "documented": 0, "different": 0}
    failures = []
    for index in range(SCENARIOS_PER_SHAPE):
        verdict = judge(draw_scenario(SEED, index, [shape]), oracle)
        outcomes[verdict.outcome] += 1
        if verdict.outcome == "different":
            path = write_failure(tmp_path, verdict, SEED)
            failures.append(f"{path}:\n" + "\n".join(f"{d.kind}:\n{d.detail}" for d in verdict.differences))
            if len(failures) == 3:
                break
    assert not failures, f"{outcomes}; replay with python -m deltastreams.devtools.differential --replay FILE\n\n" + "\n\n".join(failures)
    assert outcomes["same"] > outcomes["documented"], f"most scenarios should not need a documented difference: {outcomes}"
