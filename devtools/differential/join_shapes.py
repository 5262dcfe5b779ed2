"""The join shapes: stream-table (``stream_table_join``), stream-stream with join windows
(``stream_stream_join``), table-table (``table_table_join``) and stream-global table
(``global_table_join``) joins, inner, left and outer, each built exactly as
``jvm/src/main/java/deltastreams/oracle/JoinShapes.java`` builds it with Kafka Streams' DSL.

Input keys are letters (``a``..``d``); a side that is re-keyed gets letter keys again
(:func:`functions.letter_key`), so re-keyed records still find partners."""

from __future__ import annotations

import random
from typing import Any

from deltastreams.devtools.differential import functions as f
from deltastreams.devtools.differential.blocks import CHAIN_OPS, KEY_PRESERVING_OPS, Shape, named, Names, chain, draw_chain, sink, source
from deltastreams.devtools.differential.table_shapes import draw_table_chain, draw_table_from, table_chain, table_from
from deltastreams.streams import JoinWindows, StreamsBuilder
from deltastreams.streams.dsl import KStream, KTable


def rekeyed(stream: KStream, p: dict | None) -> KStream:
    """``select_key(letter_key(m))`` (optionally named) if ``p``: a later join repartitions."""
    if not p:
        return stream
    return stream.select_key(f.letter_key(p["m"]), **named(p))


def draw_rekey(rng: random.Random, names: Names, chance: float) -> dict | None:
    return {"m": rng.randint(2, 4)} | names.maybe("rekey") if rng.random() < chance else None


def _stream_side(builder: StreamsBuilder, topic: str, p: dict) -> KStream:
    """stream(topic) -> key-preserving chain -> [re-key], from a side's parameters."""
    return rekeyed(chain(source(builder, topic, p), p["pre"]), p.get("rekey"))


def _draw_stream_side(rng: random.Random, names: Names) -> dict:
    return {
        "source": names.maybe("source"),
        "pre": draw_chain(rng, names, rng.randint(0, 2), (*KEY_PRESERVING_OPS, "repartition")),
        "rekey": draw_rekey(rng, names, 0.3),
    }


def _table_side(builder: StreamsBuilder, topic: str, p: dict) -> KTable:
    """table(topic) (store optionally named) or stream(topic) -> to_table(), then filters and
    value mappers."""
    return table_chain(table_from(builder, topic, p["from"], p), p["ops"])


def _draw_table_side(rng: random.Random, names: Names) -> dict:
    return {"source": names.maybe("source"), "from": draw_table_from(rng, names), "ops": draw_table_chain(rng, names, rng.choice((0, 0, 1, 2)))}


# -- stream-table ------------------------------------------------------------------------------


def build_stream_table_join(builder: StreamsBuilder, p: dict) -> None:
    if p["table_first"]:
        table = _table_side(builder, "tin", p["table"])
        stream = _stream_side(builder, "in", p["stream"])
    else:
        stream = _stream_side(builder, "in", p["stream"])
        table = _table_side(builder, "tin", p["table"])
    join = p["join"]
    operator = stream.join if join["kind"] == "join" else stream.left_join
    sink(operator(table, f.joined, **named(join)), p)


def draw_stream_table_join(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    return {
        "table_first": rng.random() < 0.5,
        "stream": _draw_stream_side(rng, names),
        "table": _draw_table_side(rng, names),
        "join": {"kind": rng.choice(("join", "left_join"))} | names.maybe("join"),
        "sink": names.maybe("sink"),
    }


# -- stream-stream -----------------------------------------------------------------------------


def join_windows(w: dict) -> JoinWindows:
    windows = (
        JoinWindows.of_time_difference_with_no_grace(w["difference"])
        if w.get("grace") is None
        else JoinWindows.of_time_difference_and_grace(w["difference"], w["grace"])
    )
    if "before" in w:
        windows = windows.before(w["before"])
    if "after" in w:
        windows = windows.after(w["after"])
    return windows


def build_stream_stream_join(builder: StreamsBuilder, p: dict) -> None:
    left = _stream_side(builder, "in", p["left"])
    right = left if p.get("self") else _stream_side(builder, "in2", p["right"])
    join = p["join"]
    operator = {"join": left.join, "left_join": left.left_join, "outer_join": left.outer_join}[join["kind"]]
    stores = {"store_name": join["store_name"]} if "store_name" in join else {}
    sink(operator(right, f.joined, join_windows(p["windows"]), **named(join), **stores), p)


def draw_stream_stream_join(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    windows: dict[str, Any] = {"difference": rng.choice((0, 2, 5, 10)), "grace": rng.choice((None, 0, 3, 10))}
    if rng.random() < 0.3:
        windows["before"] = rng.choice((0, 1, 4, 8))
    if rng.random() < 0.3:
        windows["after"] = rng.choice((0, 1, 4, 8))
    join: dict[str, Any] = {"kind": rng.choice(("join", "left_join", "outer_join"))} | names.maybe("join")
    if rng.random() < names.chance:
        join["store_name"] = f"store-{next(names.counter)}"
    return {
        "left": _draw_stream_side(rng, names),
        "right": _draw_stream_side(rng, names),
        "self": rng.random() < 0.1,  # the left stream joined with itself
        "windows": windows,
        "join": join,
        "sink": names.maybe("sink"),
    }


# -- table-table -------------------------------------------------------------------------------


def joined_chain(table: KTable, ops: list[dict]) -> KTable:
    """Filters and value mappers for joined values (``left&right`` text, not numbers)."""
    for op in ops:
        name = named(op)
        match op["op"]:
            case "filter":
                table = table.filter(f.contains(op["text"], op["keep_null"]), **name)
            case "filter_not":
                table = table.filter_not(f.contains(op["text"], op["keep_null"]), **name)
            case "map_values":
                table = table.map_values(f.suffixed(op["suffix"]), **name)
            case other:
                raise ValueError(f"no table operator named {other!r}")
    return table


def draw_joined_chain(rng: random.Random, names: Names, length: int) -> list[dict]:
    chain_ = []
    for _ in range(length):
        op = rng.choice(("filter", "filter_not", "map_values"))
        step: dict[str, Any] = {"op": op}
        if op == "map_values":
            step["suffix"] = rng.choice(("!", "?"))
        else:
            step |= {"text": rng.choice(("-", "1", "&-", "!")), "keep_null": rng.random() < 0.5}
        chain_.append(step | names.maybe(op))
    return chain_


def build_table_table_join(builder: StreamsBuilder, p: dict) -> None:
    left = _table_side(builder, "tin", p["left"])
    right = _table_side(builder, "tin2", p["right"])
    join = p["join"]
    operator = {"join": left.join, "left_join": left.left_join, "outer_join": left.outer_join}[join["kind"]]
    joined = joined_chain(operator(right, f.joined, **named(join)), p["post"])
    sink(joined.to_stream(**named(p.get("to_stream"))), p)


def draw_table_table_join(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    return {
        "left": _draw_table_side(rng, names),
        "right": _draw_table_side(rng, names),
        "join": {"kind": rng.choice(("join", "left_join", "outer_join"))} | names.maybe("join"),
        "post": draw_joined_chain(rng, names, rng.choice((0, 0, 1, 2))),
        "to_stream": names.maybe("to-stream"),
        "sink": names.maybe("sink"),
    }


# -- stream-global table -----------------------------------------------------------------------


def build_global_table_join(builder: StreamsBuilder, p: dict) -> None:
    if p["global_first"]:
        table = builder.global_table("gin", **named(p.get("global")))
        stream = chain(source(builder, "in", p), p["pre"])
    else:
        stream = chain(source(builder, "in", p), p["pre"])
        table = builder.global_table("gin", **named(p.get("global")))
    selector = p["selector"]
    select = (lambda k, v: k) if selector["by"] == "key" else f.letter_key(selector["m"])
    join = p["join"]
    operator = stream.join if join["kind"] == "join" else stream.left_join
    sink(operator(table, select, f.joined, **named(join)), p)


def draw_global_table_join(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    return {
        "global_first": rng.random() < 0.5,
        "source": names.maybe("source"),
        "pre": draw_chain(rng, names, rng.randint(0, 2), CHAIN_OPS),
        "global": names.maybe("store"),
        "selector": {"by": "key"} if rng.random() < 0.4 else {"by": "value", "m": rng.randint(2, 4)},
        "join": {"kind": rng.choice(("join", "left_join"))} | names.maybe("join"),
        "sink": names.maybe("sink"),
    }


STREAM_TABLE_JOIN = Shape("stream_table_join", build_stream_table_join, draw_stream_table_join, inputs=("in", "tin"), tables=("tin",))
STREAM_STREAM_JOIN = Shape("stream_stream_join", build_stream_stream_join, draw_stream_stream_join, inputs=("in", "in2"))
TABLE_TABLE_JOIN = Shape("table_table_join", build_table_table_join, draw_table_table_join, inputs=("tin", "tin2"), tables=("tin", "tin2"))
GLOBAL_TABLE_JOIN = Shape("global_table_join", build_global_table_join, draw_global_table_join, inputs=("in", "gin"), tables=("gin",))
