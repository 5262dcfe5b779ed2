"""Differences from Kafka Streams that deltastreams keeps on purpose (docs/differences-from-kafka.md),
each stated as a scenario Kafka Streams would have to run to give what deltastreams gives. A
difference found in a scenario is *documented* only if one of these applies and Kafka's output
for the equivalent scenario equals ours record for record: so the documentation stays checked,
and anything else these inputs might hide still shows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jobs.differential.scenarios import Scenario


@dataclass(frozen=True)
class KnownDifference:
    id: str
    section: str
    """Where docs/differences-from-kafka.md explains it."""
    applies: Callable[[Scenario], bool]
    kafka_equivalent: Callable[[Scenario], Scenario]
    """The scenario whose Kafka output must equal ours on the original."""


def _windowed_aggregation(scenario: Scenario) -> bool:
    return scenario.shape == "aggregate" and scenario.params["windows"]["type"] != "none"


def _without_null_values(scenario: Scenario) -> Scenario:
    # The catalogue's stateless operators keep a null value null or drop the record, so an input
    # with a null value is exactly a record that reaches the aggregation with one.
    return scenario.with_inputs([r for r in scenario.inputs if r["value"] is not None])


KNOWN_DIFFERENCES = (
    KnownDifference(
        "null-values-in-windowed-aggregations",
        "Null keys and null values",
        lambda s: _windowed_aggregation(s) and any(r["value"] is None for r in s.inputs),
        _without_null_values,
    ),
)
