"""Scenarios: a shape, its parameters, the caching setting and the input records, as JSON both
drivers read. Inputs are drawn to make trouble: keys from a small domain so windows and joins
collide, out-of-order and too-late timestamps, jumps of stream time, null keys and values,
headers."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from deltastreams.devtools.differential.shapes import SHAPES


@dataclass(frozen=True)
class Scenario:
    id: str
    shape: str
    params: dict
    caching: bool
    inputs: list[dict] = field(default_factory=list)
    """``{"topic", "key", "value", "timestamp", "headers": [[key, value], ...]}`` in pipe order."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        return cls(**json.loads(text))

    def with_inputs(self, inputs: list[dict]) -> Scenario:
        return Scenario(self.id, self.shape, self.params, self.caching, inputs)


def scenario_rng(seed: int, index: int) -> random.Random:
    """The generator of scenario ``index`` of a run seeded ``seed``: any one scenario can be drawn
    again on its own."""
    return random.Random(f"{seed}/{index}")


def draw_scenario(seed: int, index: int, shapes: list[str] | None = None) -> Scenario:
    rng = scenario_rng(seed, index)
    shape = SHAPES[rng.choice(sorted(shapes or SHAPES))]
    params = shape.draw(rng)
    return Scenario(
        id=f"{seed}-{index}",
        shape=shape.name,
        params=params,
        caching=rng.random() < 0.5,
        inputs=draw_inputs(rng, tuple(params.get("topics", shape.inputs)), shape.tables),  # a shape may read fewer topics than it can
    )


def draw_inputs(rng: random.Random, topics: tuple[str, ...], tables: tuple[str, ...] = ()) -> list[dict]:
    """Records for ``topics``; those of ``tables`` are table updates, so they get tombstones more
    often (and, as every topic, keys from a small domain: updates of the same keys)."""
    keys = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    null_keys = rng.choice((0.0, 0.0, 0.05, 0.2))
    null_values = rng.choice((0.0, 0.0, 0.05, 0.2))
    disorder = rng.choice((0.0, 0.1, 0.3))
    too_late = rng.choice((0.0, 0.05, 0.2))
    jumps = rng.choice((0.0, 0.0, 0.1))  # stream time leaping past whole windows and retentions
    headers = rng.random() < 0.3
    # Drawn only for shapes with tables, so the other shapes' scenarios stay what they were.
    tombstones = rng.choice((0.05, 0.15, 0.3)) if tables else 0.0
    time = rng.randint(0, 30)
    inputs: list[dict[str, Any]] = []
    for i in range(rng.randint(1, 30)):
        time += rng.choice((0, 0, 1, 2, 3, 5, 8)) + (rng.randint(30, 200) if rng.random() < jumps else 0)
        stamp = time
        roll = rng.random()
        if roll < too_late:
            stamp = max(0, time - rng.randint(20, 60))
        elif roll < too_late + disorder:
            stamp = max(0, time - rng.randint(1, 10))
        topic = rng.choice(topics)
        inputs.append({
            "topic": topic,
            "key": None if rng.random() < null_keys else rng.choice(keys),
            "value": None if rng.random() < (tombstones if topic in tables else null_values) else str(rng.randint(0, 9)),
            "timestamp": stamp,
            "headers": [["h", str(i)]] if headers and rng.random() < 0.7 else [],
        })
    return inputs
