"""A scenario through deltastreams' own TopologyTestDriver, giving results in the oracle's form."""

from __future__ import annotations

from typing import Any

from deltastreams.devtools.differential.scenarios import Scenario
from deltastreams.devtools.differential.shapes import SHAPES
from deltastreams.streams import StreamsBuilder, TopologyTestDriver


def run_ours(scenario: Scenario) -> dict:
    shape = SHAPES[scenario.shape]
    result: dict[str, Any] = {"id": scenario.id}
    try:
        builder = StreamsBuilder()
        shape.build(builder, scenario.params)
        topology = builder.build()
        result["describe"] = str(topology.describe())
    except Exception as e:  # noqa: BLE001 - reported as the scenario's result
        result["error"] = f"topology: {type(e).__name__}: {e}"
        return result
    outputs: list[dict] = []
    result["outputs"] = outputs
    with TopologyTestDriver(topology, {"caching": scenario.caching}) as driver:
        try:
            for record in scenario.inputs:
                if "advance_ms" in record:
                    driver.advance_wall_clock(record["advance_ms"])
                    continue
                headers = [(k, v.encode()) for k, v in record.get("headers") or []]
                driver.pipe_input(record["topic"], record["key"], record["value"], record["timestamp"], headers=headers or None)
        except Exception as e:  # noqa: BLE001
            result["error"] = f"{type(e).__name__}: {e}"
        for topic in shape.outputs:
            outputs.extend(_row(topic, r) for r in driver.read_output(topic))
        result["dropped"] = driver.dropped_records
    return result


def _row(topic: str, record) -> dict:
    row: dict[str, Any] = {"topic": topic, "key": record.key}
    if record.window_start is not None:
        row["window_start"], row["window_end"] = record.window_start, record.window_end
    row["value"] = record.value
    row["timestamp"] = record.timestamp
    row["headers"] = [[k, v.decode(errors="replace") if v is not None else None] for k, v in record.headers]
    return row
