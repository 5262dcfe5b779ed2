"""One scenario through both drivers, judged: the same, different in a documented way, or
different (then shrunk to a minimal scenario that still is)."""

from __future__ import annotations

import json
from itertools import combinations
from dataclasses import dataclass, field
from pathlib import Path

from deltastreams.devtools.differential.compare import Difference, differences, shrink
from deltastreams.devtools.differential.known import KNOWN_DIFFERENCES
from deltastreams.devtools.differential.oracle import KafkaStreamsOracle
from deltastreams.devtools.differential.ours import run_ours
from deltastreams.devtools.differential.scenarios import Scenario


@dataclass(frozen=True)
class Verdict:
    outcome: str
    """``same``, ``documented`` or ``different``."""
    documented_as: str | None = None
    differences: list[Difference] = field(default_factory=list)
    minimal: Scenario | None = None


def _undocumented(scenario: Scenario, oracle: KafkaStreamsOracle) -> tuple[list[Difference], str | None]:
    ours = run_ours(scenario)
    kafka = oracle.run(scenario)
    null_keys = any(r.get("key", "") is None for r in scenario.inputs)
    # Our null keys go to the dead-letter topic, uncounted; Kafka counts those reaching an
    # aggregation as dropped (and drops those before a repartition topic uncounted): with null
    # keys in the input the counts need not agree (docs/differences-from-kafka.md).
    found = differences(kafka, ours, dropped=not null_keys)
    if not found:
        return [], None
    applicable = [known for known in KNOWN_DIFFERENCES if known.applies(scenario)]
    for size in range(1, len(applicable) + 1):
        for together in combinations(applicable, size):
            equivalent = scenario
            for known in together:
                equivalent = known.kafka_equivalent(equivalent)
            # What a topology looks like is judged on the scenario itself (an equivalent may
            # build its topology differently, e.g. a store given a retention).
            result = oracle.run(equivalent) | {"describe": kafka.get("describe")}
            dropped = not null_keys and not any(known.changes_dropped for known in together)
            if not differences(result, ours, dropped=dropped):
                return [], "+".join(known.id for known in together)
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
