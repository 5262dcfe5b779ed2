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
    """The scenario whose Kafka output must equal ours on the original. Several that apply to
    one scenario are also tried together (each equivalent applied to the last's)."""
    same_topology: bool = True
    """False if the equivalent builds Kafka's topology differently (a store given a retention,
    which takes Kafka a counter value): then its records must equal ours, and the original's
    describe() must still equal Kafka's."""


def _windowed_aggregation(scenario: Scenario) -> bool:
    return scenario.shape == "aggregate" and scenario.params["windows"]["type"] != "none"


def _without_null_values(scenario: Scenario) -> Scenario:
    # The catalogue's stateless operators keep a null value null or drop the record, so an input
    # with a null value is exactly a record that reaches the aggregation with one.
    return scenario.with_inputs([r for r in scenario.inputs if "advance_ms" in r or r["value"] is not None])


EMIT_INTERVAL_MS = 1000
"""Kafka's ``emit.interval.ms.kstreams.windowed.aggregation`` (internal, 1000 by default): its
emit-final aggregations look for closed windows at most this often, in wall-clock time."""


def _emits_final(scenario: Scenario) -> bool:
    return scenario.shape == "aggregate" and scenario.params.get("emit") == "final"


LONG_RETENTION_MS = 10**9
"""A window store retention longer than any scenario's stream time."""


def _every_record_looks(scenario: Scenario) -> Scenario:
    # Kafka's test driver's clock stands still unless moved, so its emit-final aggregations look
    # for closed windows at the first record only; moved an interval before every record, they
    # look at every record, as deltastreams does (nothing else in these shapes reads the clock).
    # And a window its store dropped (stream time jumped past the retention, size plus grace)
    # before a look is never emitted; with a long retention, none is dropped, as here.
    inputs: list[dict] = []
    for record in scenario.inputs:
        if "advance_ms" not in record:
            inputs.append({"advance_ms": EMIT_INTERVAL_MS})
        inputs.append(record)
    params = scenario.params | {"kafka_retention_ms": LONG_RETENTION_MS}
    return Scenario(scenario.id, scenario.shape, params, scenario.caching, inputs)


def _cached_sessions(scenario: Scenario) -> bool:
    return scenario.shape == "aggregate" and scenario.params["windows"]["type"] == "session" and scenario.caching


def _cache_keeping_nothing(scenario: Scenario) -> Scenario:
    # Kafka's record cache keeps sessions its RocksDB store has dropped for retention (ended
    # gap + grace before stream time), until it evicts them; a cache of one byte evicts every
    # entry as it is put (forwarding it as a cache does: with its record's headers), so Kafka's
    # store is then what the store here is.
    return Scenario(scenario.id, scenario.shape, scenario.params | {"kafka_cache_max_bytes": 1}, scenario.caching, scenario.inputs)


KNOWN_DIFFERENCES = (
    KnownDifference(
        "null-values-in-windowed-aggregations",
        "Null keys and null values",
        lambda s: _windowed_aggregation(s) and any(r["value"] is None for r in s.inputs),
        _without_null_values,
    ),
    KnownDifference(
        "emit-final-looks-at-every-record",
        "Session windows",
        _emits_final,
        _every_record_looks,
        same_topology=False,
    ),
    KnownDifference(
        "no-cache-keeps-expired-sessions",
        "Session windows",
        _cached_sessions,
        _cache_keeping_nothing,
    ),
)
