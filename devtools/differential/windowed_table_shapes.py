"""The ``windowed_table`` shape: two windowed reductions (``KTable<Windowed<K>, V>``), the first
filtered now and then (deletes of windows), then joined table-table (inner, left, outer: on key
and window start) or the first re-grouped by its record key into a plain reduce with a
subtractor; keys out as ``key@start/end`` text. Built exactly as
``jvm/src/main/java/deltastreams/oracle/WindowedTableShapes.java`` builds it with Kafka Streams'
DSL. Null values are filtered out before the windowed reductions (Kafka's windowed reduce
stores them; see docs/differences-from-kafka.md)."""

from __future__ import annotations

import random
from typing import Any

from deltastreams.devtools.differential import functions as f
from deltastreams.devtools.differential.blocks import Names, Shape, named, sink, source
from deltastreams.streams import StreamsBuilder, TimeWindows
from deltastreams.streams.dsl import KTable


def _windowed_side(builder: StreamsBuilder, topic: str, side: dict) -> KTable:
    spec = TimeWindows.of_size_and_grace(side["size"], side["grace"])
    if "advance" in side:
        spec = spec.advance_by(side["advance"])
    stream = source(builder, topic, side).filter(lambda k, v: v is not None)
    table = stream.group_by_key().windowed_by(spec).reduce(f.total, **named(side.get("store")))
    if "filter" in side:
        table = table.filter(f.filter_(side["filter"]["m"], side["filter"]["r"], False), **named(side["filter"]))
    return table


def build_windowed_table(builder: StreamsBuilder, p: dict) -> None:
    left = _windowed_side(builder, "in", p["left"])
    then = p["then"]
    if then["kind"] == "group_by":
        grouped = left.group_by(lambda wk, v: (wk.key, v), **named(then))
        table = grouped.reduce(f.total, f.difference, **named(then.get("store")))
    else:
        right = _windowed_side(builder, "in2", p["right"])
        operator = {"join": left.join, "left_join": left.left_join, "outer_join": left.outer_join}[then["kind"]]
        table = operator(right, f.joined, **named(then))
    out = table.to_stream(**named(p.get("to_stream"))).map(lambda k, v: (f.key_text(k), v))
    sink(out, p)


def _draw_side(rng: random.Random, names: Names, like: dict | None = None) -> dict:
    side: dict[str, Any] = {"size": rng.choice((5, 10, 20)), "grace": rng.choice((0, 5, 20, 1000))}
    if like is not None and rng.random() < 0.7:  # mostly the same windows on both sides
        side = {k: like[k] for k in ("size", "grace", "advance") if k in like}
    elif rng.random() < 0.3:
        side["advance"] = rng.choice([a for a in (2, 5, 10) if a <= side["size"]])
    side["source"] = names.maybe("source")
    side["store"] = names.maybe("store")
    if rng.random() < 0.5:
        side["filter"] = {"m": rng.randint(2, 4), "r": rng.randint(0, 1)} | names.maybe("filter")
    return side


def draw_windowed_table(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    left = _draw_side(rng, names)
    p: dict[str, Any] = {"left": left, "right": _draw_side(rng, names, left)}
    p["then"] = {"kind": rng.choice(("join", "left_join", "outer_join", "group_by"))} | names.maybe("then")
    if p["then"]["kind"] == "group_by":
        p["then"]["store"] = names.maybe("store")
        p["topics"] = ["in"]  # the re-grouping reads the first table only
    p["to_stream"] = names.maybe("to-stream")
    p["sink"] = names.maybe("sink")
    return p


WINDOWED_TABLE = Shape("windowed_table", build_windowed_table, draw_windowed_table, inputs=("in", "in2"))
