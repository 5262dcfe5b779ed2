"""The building blocks of the catalogue's shapes (jobs/differential/shapes.py and the modules it
registers): the Shape record, drawing user names, chains of stateless operators, sources, sinks,
and suppression parameters. Kept apart from the registry so that the modules defining shapes
and the registry that imports them form no import cycle."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from typing import Any

from jobs.differential import functions as f
from streams import BufferConfig, StreamsBuilder, Suppressed
from streams.dsl import KStream


@dataclass(frozen=True)
class Shape:
    name: str
    build: Callable[[StreamsBuilder, dict], None]
    """Adds the shape's topology to a builder."""
    draw: Callable[[random.Random], dict]
    """Random parameters."""
    inputs: tuple[str, ...] = ("in",)
    """The topics scenarios pipe records into."""
    outputs: tuple[str, ...] = ("out",)
    """The topics whose records are compared."""
    tables: tuple[str, ...] = ()
    """Those of ``inputs`` read as tables: drawn with more tombstones (null values)."""


# -- drawing names ----------------------------------------------------------------------------


class _Names:
    """Draws a user name for an operator now and then; names are unique within a topology."""

    def __init__(self, rng: random.Random, chance: float) -> None:
        self.rng, self.chance, self.counter = rng, chance, count()

    def maybe(self, what: str) -> dict:
        return {"name": f"{what}-{next(self.counter)}"} if self.rng.random() < self.chance else {}


def _named(p: dict) -> dict:
    name = (p or {}).get("name")
    return {"name": name} if name is not None else {}


# -- stateless chains -------------------------------------------------------------------------

_CHAIN_OPS = ("filter", "filter_not", "map_values", "select_key", "map", "flat_map_values", "flat_map", "peek", "repartition")
_KEY_PRESERVING_OPS = ("filter", "filter_not", "map_values", "flat_map_values", "peek")


def draw_chain(rng: random.Random, names: _Names, length: int, ops: tuple[str, ...] = _CHAIN_OPS) -> list[dict]:
    chain = []
    for _ in range(length):
        op = rng.choice(ops)
        step: dict[str, Any] = {"op": op}
        if op in ("filter", "filter_not"):
            step |= {"m": rng.randint(2, 5), "r": 0, "keep_null": rng.random() < 0.5}
            step["r"] = rng.randrange(step["m"])
        elif op == "map_values":
            step["a"] = rng.randint(0, 3)
        elif op == "select_key":
            step["m"] = rng.randint(2, 4)
        elif op == "map":
            step |= {"m": rng.randint(2, 4), "a": rng.randint(0, 3)}
        elif op == "flat_map_values":
            step["n"] = rng.randint(0, 2)
        elif op == "flat_map":
            step |= {"n": rng.randint(0, 2), "m": rng.randint(2, 4)}
        chain.append(step | names.maybe(op))
    return chain


def chain(stream: KStream, ops: list[dict]) -> KStream:
    for op in ops:
        name = _named(op)
        match op["op"]:
            case "filter":
                stream = stream.filter(f.filter_(op["m"], op["r"], op["keep_null"]), **name)
            case "filter_not":
                stream = stream.filter_not(f.filter_(op["m"], op["r"], op["keep_null"]), **name)
            case "map_values":
                stream = stream.map_values(f.add_to_value(op["a"]), **name)
            case "select_key":
                stream = stream.select_key(f.key_from_value("k", op["m"]), **name)
            case "map":
                stream = stream.map(f.map_(op["m"], op["a"]), **name)
            case "flat_map_values":
                stream = stream.flat_map_values(f.flat_map_values(op["n"]), **name)
            case "flat_map":
                stream = stream.flat_map(f.flat_map(op["n"], op["m"]), **name)
            case "peek":
                stream = stream.peek(lambda k, v: None, **name)
            case "repartition":
                stream = stream.repartition(**name)
            case other:
                raise ValueError(f"no stateless operator named {other!r}")
    return stream


def source(builder: StreamsBuilder, topic: str, p: dict) -> KStream:
    return builder.stream(topic, **_named(p.get("source")))


def sink(stream: KStream, p: dict) -> None:
    stream.to("out", **_named(p.get("sink")))



def _suppressed(s: dict) -> Suppressed:
    if s["until"] == "window_close":
        return Suppressed.until_window_closes(BufferConfig.unbounded())
    buffer = BufferConfig.max_records(s["max_records"]).emit_early_when_full() if "max_records" in s else BufferConfig.unbounded()
    return Suppressed.until_time_limit(s["limit_ms"], buffer)
