"""The catalogue of topology shapes: each builds a topology from parameters with deltastreams' DSL
exactly as ``jvm/src/main/java/deltastreams/oracle/Shapes.java`` builds it with Kafka Streams',
and draws random parameters for itself. A parameter ``name`` names the operator (deltastreams'
``name=``; Kafka's ``Named``/``Materialized``/``Grouped``/``Produced``/``Consumed``/``Suppressed``
names), so generated and user-named operators are both checked."""

from __future__ import annotations

import random
from typing import Any

from deltastreams.devtools.differential import cogroup_shapes, foreign_key_shapes, join_shapes, processor_shapes, table_shapes
from deltastreams.devtools.differential.windowed_table_shapes import WINDOWED_TABLE
from deltastreams.devtools.differential import functions as f
from deltastreams.devtools.differential.blocks import KEY_PRESERVING_OPS, Names, Shape, chain, draw_chain, draw_time_limit, draw_windows, named, sink, source, suppressed
from deltastreams.streams import EmitStrategy, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows

__all__ = ["SHAPES", "Shape"]


# -- shapes -----------------------------------------------------------------------------------


def build_stateless(builder: StreamsBuilder, p: dict) -> None:
    sink(chain(source(builder, "in", p), p["chain"]), p)


def draw_stateless(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    return {
        "source": names.maybe("source"),
        "chain": draw_chain(rng, names, rng.randint(0, 5)),
        "sink": names.maybe("sink"),
    }


def build_aggregate(builder: StreamsBuilder, p: dict) -> None:
    stream = chain(source(builder, "in", p), p["pre"])
    grouping = p["grouping"]
    if grouping["by"] == "key":
        grouped = stream.group_by_key(**named(grouping))
    else:
        grouped = stream.group_by(f.key_from_value("g", grouping["m"]), **named(grouping))
    w = p["windows"]
    final = p.get("emit") == "final"
    match w["type"]:
        case "none":
            windowed = grouped
        case "tumbling" | "hopping":
            spec = TimeWindows.of_size_and_grace(w["size"], w["grace"])
            if w["type"] == "hopping":
                spec = spec.advance_by(w["advance"])
            windowed = grouped.windowed_by(spec)
        case "sliding":
            windowed = grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(w["difference"], w["grace"]))
        case "session":
            windowed = grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(w["gap"], w["grace"]))
        case other:
            raise ValueError(f"no windows of type {other!r}")
    if final:
        windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
    aggregation = p["aggregation"]
    store = named(aggregation)
    match aggregation["kind"]:
        case "count":
            table = windowed.count(**store)
        case "reduce":
            table = windowed.reduce(f.total, **store)
        case "aggregate" if w["type"] == "session":
            table = windowed.aggregate(f.zero, f.append, f.merge_sessions, **store)
        case "aggregate":
            table = windowed.aggregate(f.zero, f.append, **store)
    if p.get("suppress"):
        table = table.suppress(suppressed(p["suppress"]), **named(p["suppress"]))
    out = table.to_stream(**named(p.get("to_stream")))
    if p.get("post") == "to_strings":
        out = out.map(lambda k, v: (f.key_text(k), None if v is None else str(v)))
    sink(out, p)


def draw_aggregate(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    windows = draw_windows(rng)
    window_type = windows["type"]
    p: dict[str, Any] = {
        "source": names.maybe("source"),
        "pre": draw_chain(rng, names, rng.randint(0, 2), ("filter", "map_values", "select_key", "map") if rng.random() < 0.5 else KEY_PRESERVING_OPS),
        "grouping": {"by": "key"} if rng.random() < 0.6 else {"by": "selector", "m": rng.randint(2, 4)},
        "windows": windows,
        "aggregation": {"kind": rng.choice(("count", "reduce", "aggregate"))},
    }
    p["grouping"] |= names.maybe("grouping")
    p["aggregation"] |= names.maybe("store")
    if window_type != "none" and rng.random() < 0.3:
        p["emit"] = "final"
    elif rng.random() < 0.4:
        if window_type != "none" and rng.random() < 0.5:
            p["suppress"] = {"until": "window_close"}
            if rng.random() < 0.2:
                p["suppress"]["max_records"] = rng.randint(1, 4)
        else:
            p["suppress"] = draw_time_limit(rng)
        p["suppress"] |= names.maybe("suppress")
    p["to_stream"] = names.maybe("to-stream")
    if rng.random() < 0.3:
        p["post"] = "to_strings"
    p["sink"] = names.maybe("sink")
    return p


SHAPES: dict[str, Shape] = {
    shape.name: shape
    for shape in (
        Shape("stateless", build_stateless, draw_stateless),
        Shape("aggregate", build_aggregate, draw_aggregate),
        Shape("cogroup", cogroup_shapes.build_cogroup, cogroup_shapes.draw_cogroup, inputs=cogroup_shapes.TOPICS),
        table_shapes.TABLE,
        join_shapes.STREAM_TABLE_JOIN,
        join_shapes.STREAM_STREAM_JOIN,
        join_shapes.TABLE_TABLE_JOIN,
        join_shapes.GLOBAL_TABLE_JOIN,
        foreign_key_shapes.FK_JOIN,
        processor_shapes.MERGE_SPLIT,
        processor_shapes.PROCESSOR,
        WINDOWED_TABLE,
    )
}
