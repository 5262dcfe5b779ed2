"""Every committed scenario file (``tests/differential/scenarios/*.json``) through Kafka Streams'
TopologyTestDriver and ours keeps the verdict it records: ``"verdict": "same"`` for a difference
that was fixed (it must stay fixed), ``"documented"`` with ``"documented_as"`` for one
docs/differences-from-kafka.md explains (its KnownDifference's Kafka-equivalent scenario gives
Kafka our records). ``"why"`` says what the file checks. A file is a scenario as
``python -m jobs.differential --replay FILE`` takes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.differential.runner import judge, read_scenario

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


def test_there_are_scenario_files():
    assert SCENARIOS, "no scenario files under tests/differential/scenarios"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_a_scenario_file_keeps_its_verdict(path, oracle):
    expected = json.loads(path.read_text())
    assert expected["verdict"] in ("same", "documented") and expected.get("why"), f"{path.name}: give a verdict and say why"
    assert (expected["verdict"] == "documented") == ("documented_as" in expected), f"{path.name}: a documented verdict names its KnownDifference"
    verdict = judge(read_scenario(path), oracle, minimize=False)
    found = "\n\n".join(f"{d.kind}:\n{d.detail}" for d in verdict.differences)
    assert (verdict.outcome, verdict.documented_as) == (expected["verdict"], expected.get("documented_as")), f"{path.name} ({expected['why']}):\n{found}"
