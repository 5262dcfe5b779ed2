"""The building blocks of the catalogue's shapes (deltastreams.devtools.differential.shapes and the shapes in
modules of their own): the Shape record, drawing names, stateless chains, sources and sinks,
windows and suppression, built with deltastreams' DSL as
``jvm/src/main/java/deltastreams/oracle/Shapes.java`` builds them with Kafka Streams'. Kept apart
from the registry so that the modules defining shapes and the registry importing them form no
import cycle."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from typing import Any

from deltastreams.devtools.differential import functions as f
from deltastreams.streams import BufferConfig, StreamsBuilder, Suppressed
from deltastreams.streams.dsl import KStream


@dataclass(frozen=True)
class Shape:
    name: str
    build: Callable[[StreamsBuilder, dict], None]
    """Adds the shape's topology to a builder."""
    draw: Callable[[random.Random], dict]
    """Random parameters."""
    inputs: tuple[str, ...] = ("in",)
    """The topics scenarios pipe records into (a shape's parameters may name fewer: ``topics``)."""
    outputs: tuple[str, ...] = ("out",)
    """The topics whose records are compared."""
    tables: tuple[str, ...] = ()
    """Those of ``inputs`` read as tables: drawn with more tombstones (null values)."""


# -- drawing names ----------------------------------------------------------------------------


class Names:
    """Draws a user name for an operator now and then; names are unique within a topology."""

    def __init__(self, rng: random.Random, chance: float) -> None:
        self.rng, self.chance, self.counter = rng, chance, count()

    def maybe(self, what: str) -> dict:
        return {"name": f"{what}-{next(self.counter)}"} if self.rng.random() < self.chance else {}


def named(p: dict) -> dict:
    name = (p or {}).get("name")
    return {"name": name} if name is not None else {}


# -- stateless chains -------------------------------------------------------------------------

CHAIN_OPS = ("filter", "filter_not", "map_values", "select_key", "map", "flat_map_values", "flat_map", "peek", "repartition")
KEY_PRESERVING_OPS = ("filter", "filter_not", "map_values", "flat_map_values", "peek")


def draw_chain(rng: random.Random, names: Names, length: int, ops: tuple[str, ...] = CHAIN_OPS) -> list[dict]:
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
        name = named(op)
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
    return builder.stream(topic, **named(p.get("source")))


def sink(stream: KStream, p: dict) -> None:
    stream.to("out", **named(p.get("sink")))


def suppressed(s: dict) -> Suppressed:
    """``{"until": "window_close", "max_records"?}`` (a bounded buffer shuts down when full: final
    results cannot go out early) or ``{"until": "time_limit", "limit_ms", "max_records"?,
    "when_full"?: "emit_early" | "shut_down"}``."""
    bounded = "max_records" in s
    if s["until"] == "window_close":
        return Suppressed.until_window_closes(BufferConfig.max_records(s["max_records"]).shut_down_when_full() if bounded else BufferConfig.unbounded())
    buffer = BufferConfig.unbounded()
    if bounded:
        buffer = BufferConfig.max_records(s["max_records"])
        buffer = buffer.shut_down_when_full() if s.get("when_full") == "shut_down" else buffer.emit_early_when_full()
    return Suppressed.until_time_limit(s["limit_ms"], buffer)


def draw_windows(rng: random.Random) -> dict:
    """None, or tumbling, hopping (its advance up to its size), sliding or session windows, with
    a grace of 0 now and then."""
    window_type = rng.choice(("none", "tumbling", "hopping", "sliding", "session"))
    windows: dict[str, Any] = {"type": window_type}
    grace = rng.choice((0, 0, 5, 20))
    if window_type in ("tumbling", "hopping"):
        windows |= {"size": rng.choice((5, 10, 20)), "grace": grace}
        if window_type == "hopping":
            windows["advance"] = rng.choice([a for a in (2, 5, 10, 20) if a <= windows["size"]])
    elif window_type == "sliding":
        windows |= {"difference": rng.choice((5, 10)), "grace": grace}
    elif window_type == "session":
        windows |= {"gap": rng.choice((3, 5, 10)), "grace": grace}
    return windows


def draw_time_limit(rng: random.Random) -> dict:
    suppress: dict[str, Any] = {"until": "time_limit", "limit_ms": rng.choice((0, 5, 20))}
    if rng.random() < 0.5:
        suppress["max_records"] = rng.randint(1, 3)
        suppress["when_full"] = "shut_down" if rng.random() < 0.2 else "emit_early"
    return suppress
