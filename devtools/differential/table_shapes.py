"""The ``table`` shape: a KTable, from ``builder.table`` or ``to_table``, through filters and
value mappers, optionally re-grouped and aggregated (count, reduce or aggregate with a
subtractor; a reduce's table filtered and mapped again), optionally suppressed, then its changes
out. Built exactly as
``jvm/src/main/java/deltastreams/oracle/TableShapes.java`` builds it with Kafka Streams' DSL."""

from __future__ import annotations

import random
from typing import Any

from deltastreams.devtools.differential import functions as f
from deltastreams.devtools.differential.blocks import CHAIN_OPS, Shape, named, Names, suppressed, chain, draw_chain, sink, source
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.dsl import KTable

_TABLE_OPS = ("filter", "filter_not", "map_values")


def draw_table_chain(rng: random.Random, names: Names, length: int) -> list[dict]:
    """Up to ``length`` KTable filters and value mappers (the stream chain's steps of those kinds)."""
    return draw_chain(rng, names, length, _TABLE_OPS)


def table_chain(table: KTable, ops: list[dict]) -> KTable:
    for op in ops:
        name = named(op)
        match op["op"]:
            case "filter":
                table = table.filter(f.filter_(op["m"], op["r"], op["keep_null"]), **name)
            case "filter_not":
                table = table.filter_not(f.filter_(op["m"], op["r"], op["keep_null"]), **name)
            case "map_values":
                table = table.map_values(f.add_to_value(op["a"]), **name)
            case other:
                raise ValueError(f"no table operator named {other!r}")
    return table


def table_from(builder: StreamsBuilder, topic: str, origin: dict, p: dict) -> KTable:
    """``builder.table(topic)`` (its store named by ``origin["name"]``), or
    ``stream(topic) -> pre chain -> to_table()`` (the processor named by ``origin["name"]``)."""
    if origin["kind"] == "table":
        return builder.table(topic, **named(origin))
    return chain(source(builder, topic, p), origin["pre"]).to_table(**named(origin))


def draw_table_from(rng: random.Random, names: Names) -> dict:
    if rng.random() < 0.7:
        return {"kind": "table"} | names.maybe("store")
    return {"kind": "stream", "pre": draw_chain(rng, names, rng.randint(0, 2), CHAIN_OPS)} | names.maybe("to-table")


def build_table(builder: StreamsBuilder, p: dict) -> None:
    table = table_chain(table_from(builder, "tin", p["from"], p), p["ops"])
    then = p["then"]
    if then["kind"] == "group_by":
        grouped = table.group_by(f.regroup(then["m"]), **named(then))
        aggregation = then["aggregation"]
        store = named(aggregation)
        match aggregation["kind"]:
            case "count":
                table = grouped.count(**store)
            case "reduce":
                table = grouped.reduce(f.total, f.difference, **store)
            case "aggregate":
                table = grouped.aggregate(f.zero, f.append, f.append_removal, **store)
        table = table_chain(table, then.get("post_ops", []))
    if then.get("suppress"):
        table = table.suppress(suppressed(then["suppress"]), **named(then["suppress"]))
    sink(table.to_stream(**named(p.get("to_stream"))), p)


def draw_table(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    p: dict[str, Any] = {"source": names.maybe("source"), "from": draw_table_from(rng, names)}
    p["ops"] = draw_table_chain(rng, names, rng.randint(0, 3))
    then: dict[str, Any] = {"kind": "to_stream"}
    if rng.random() < 0.65:
        then = {"kind": "group_by", "m": rng.choice((0, 2, 3))} | names.maybe("grouping")
        then["aggregation"] = {"kind": rng.choice(("count", "reduce", "aggregate"))} | names.maybe("store")
        if then["aggregation"]["kind"] == "reduce" and rng.random() < 0.4:  # sums: numbers the chain's functions take
            then["post_ops"] = draw_table_chain(rng, names, rng.randint(1, 2))
    if rng.random() < 0.3:
        then["suppress"] = {"until": "time_limit", "limit_ms": rng.choice((0, 5, 20))}
        if rng.random() < 0.5:
            then["suppress"]["max_records"] = rng.randint(1, 3)
        then["suppress"] |= names.maybe("suppress")
    p["then"] = then
    p["to_stream"] = names.maybe("to-stream")
    p["sink"] = names.maybe("sink")
    return p


TABLE = Shape("table", build_table, draw_table, inputs=("tin",), tables=("tin",))
