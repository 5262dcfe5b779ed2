"""One scenario through both drivers, judged: the same, different in a documented way, or
different (then shrunk to a minimal scenario that still is)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from jobs.differential.compare import Difference, differences, shrink
from jobs.differential.known import KNOWN_DIFFERENCES, KnownDifference
from jobs.differential.oracle import KafkaStreamsOracle
from jobs.differential.ours import run_ours
from jobs.differential.scenarios import Scenario


@dataclass(frozen=True)
class Verdict:
    outcome: str
    """``same``, ``documented`` or ``different``."""
    documented_as: str | None = None
    differences: list[Difference] = field(default_factory=list)
    minimal: Scenario | None = None


def _undocumented(scenario: Scenario, oracle: KafkaStreamsOracle) -> tuple[list[Difference], str | None]:
    ours = run_ours(scenario)
    found = differences(oracle.run(scenario), ours)
    if not found:
        return [], None
    described = [d for d in found if d.kind == "describe"]

    def explained(known: list[KnownDifference]) -> bool:
        equivalent = scenario
        for k in known:
            equivalent = k.kafka_equivalent(equivalent)
        left = differences(oracle.run(equivalent), ours)
        if all(k.same_topology for k in known):
            return not left
        return not described and all(d.kind == "describe" for d in left)

    applicable = [known for known in KNOWN_DIFFERENCES if known.applies(scenario)]
    for known in applicable:
        if explained([known]):
            return [], known.id
    if len(applicable) > 1 and explained(applicable):
        return [], "+".join(known.id for known in applicable)
    return found, None


def judge(scenario: Scenario, oracle: KafkaStreamsOracle, *, minimize: bool = True) -> Verdict:
    found, documented = _undocumented(scenario, oracle)
    if documented is not None:
        return Verdict("documented", documented)
    if not found:
        return Verdict("same")
    kinds = {d.kind for d in found}
    minimal = scenario
    if minimize:
        minimal = shrink(scenario, lambda s: kinds <= {d.kind for d in _undocumented(s, oracle)[0]})
        found = _undocumented(minimal, oracle)[0]
    return Verdict("different", differences=found, minimal=minimal)


def write_failure(directory: Path, verdict: Verdict, seed: int) -> Path:
    """The minimal scenario as a file ``--replay`` takes, with what differed."""
    assert verdict.minimal is not None
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{verdict.minimal.shape}-{verdict.minimal.id}.json"
    payload = json.loads(verdict.minimal.to_json())
    payload["seed"] = seed
    payload["differences"] = [{"kind": d.kind, "detail": d.detail} for d in verdict.differences]
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path


def read_scenario(path: Path) -> Scenario:
    payload = json.loads(Path(path).read_text())
    return Scenario(payload["id"], payload["shape"], payload["params"], payload["caching"], payload["inputs"])
