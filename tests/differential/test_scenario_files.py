"""Every scenario file committed under tests/differential/scenarios/ through Kafka Streams'
TopologyTestDriver and ours, judged as the file expects: ``"expect": "same"`` (a difference
found and fixed, kept so it stays fixed) or ``{"documented": id}`` (a difference
docs/differences-from-kafka.md explains, checked by its KnownDifference's Kafka-equivalent
scenario). ``python -m deltastreams.devtools.differential --replay FILE`` runs one and prints what differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deltastreams.devtools.differential.known import KNOWN_DIFFERENCES
from deltastreams.devtools.differential.runner import judge, read_scenario

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


def test_there_are_scenario_files():
    assert SCENARIOS, "tests/differential/scenarios/ holds no scenario file"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_a_committed_scenario_keeps_its_verdict(path, oracle):
    expect = json.loads(path.read_text())["expect"]
    verdict = judge(read_scenario(path), oracle, minimize=False)
    detail = "\n".join(f"{d.kind}:\n{d.detail}" for d in verdict.differences)
    if expect == "same":
        assert verdict.outcome == "same", f"{path.name}: {verdict.outcome} ({verdict.documented_as})\n{detail}"
    else:
        known = {k.id for k in KNOWN_DIFFERENCES}
        assert set(expect["documented"].split("+")) <= known, f"{path.name} names an unknown difference {expect['documented']!r}"
        assert (verdict.outcome, verdict.documented_as) == ("documented", expect["documented"]), detail


def test_every_known_difference_has_a_scenario_file():
    """A documented difference without a scenario showing it is a claim nobody checks."""
    documented = set()
    for path in SCENARIOS:
        expect = json.loads(path.read_text())["expect"]
        if expect != "same":
            documented |= set(expect["documented"].split("+"))
    assert {k.id for k in KNOWN_DIFFERENCES} <= documented
