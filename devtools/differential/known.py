"""Differences from Kafka Streams that deltastreams keeps on purpose (docs/differences-from-kafka.md),
each stated as a scenario Kafka Streams would have to run to give what deltastreams gives. A
difference found in a scenario is *documented* only if the known differences that apply to it,
alone or together, turn it into a scenario whose Kafka output equals ours record for record: so
the documentation stays checked, and anything else these inputs might hide still shows."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from deltastreams.devtools.differential.scenarios import Scenario


@dataclass(frozen=True)
class KnownDifference:
    id: str
    section: str
    """Where docs/differences-from-kafka.md explains it."""
    applies: Callable[[Scenario], bool]
    kafka_equivalent: Callable[[Scenario], Scenario]
    """The scenario whose Kafka output must equal ours on the original."""
    changes_dropped: bool = False
    """Whether it also changes the dropped-records count (then the counts are not compared)."""


def _windows(scenario: Scenario) -> str:
    return (scenario.params.get("windows") or {}).get("type", "none")


def _windowed_aggregation(scenario: Scenario) -> bool:
    return scenario.shape in ("aggregate", "cogroup") and _windows(scenario) != "none"


def _without_null_values(scenario: Scenario) -> Scenario:
    # The catalogue's stateless operators keep a null value null or drop the record, so an input
    # with a null value is a record that reaches the aggregation with one, or none at all.
    return scenario.with_inputs([r for r in scenario.inputs if "advance_ms" in r or r["value"] is not None])


KAFKA_RETENTION_MS = 10**9
"""A window store retention longer than any scenario's span of timestamps."""


def _with_long_retention(scenario: Scenario) -> Scenario:
    params = copy.deepcopy(scenario.params)
    params["windows"]["kafka_retention_ms"] = KAFKA_RETENTION_MS
    return Scenario(scenario.id, scenario.shape, params, scenario.caching, scenario.inputs)


def _cache_forgetting_flushed(scenario: Scenario) -> Scenario:
    params = copy.deepcopy(scenario.params) | {"kafka_cache_forgets_flushed": True}
    return Scenario(scenario.id, scenario.shape, params, scenario.caching, scenario.inputs)


KNOWN_DIFFERENCES = (
    KnownDifference(
        "null-values-in-windowed-aggregations",
        "Null keys and null values",
        lambda s: _windowed_aggregation(s) and any(r.get("value", 0) is None for r in s.inputs),
        _without_null_values,
        changes_dropped=True,  # counted as dropped here; Kafka aggregates them
    ),
    KnownDifference(
        "emit-final-beyond-retention",
        "Session windows",
        lambda s: s.shape == "aggregate" and s.params.get("emit") == "final" and _windows(s) in ("tumbling", "hopping", "sliding"),
        _with_long_retention,
    ),
    KnownDifference(
        "cache-keeps-windows-past-retention",
        "Session windows",
        # Sessions and sliding windows are read past retention (a sliding window looks back for
        # the records before), and a cogroup's time windows too (one input behind another), and
        # a windowed table joined with another (one table's windows behind the other's).
        lambda s: s.caching and (_windows(s) in ("session", "sliding") or (s.shape == "cogroup" and _windows(s) != "none") or s.shape == "windowed_table"),
        _cache_forgetting_flushed,
    ),
)
