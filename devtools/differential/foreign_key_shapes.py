"""The foreign-key join shape (``fk_join``): ``table("tin").join(table("tin2"),
foreign_key, joined)``, each table from ``builder.table`` or ``to_table`` through filters and
value mappers, the join optionally named and materialized, then filters and value mappers of the
joined values, out. Built exactly as
``jvm/src/main/java/deltastreams/oracle/ForeignKeyShapes.java`` builds it with Kafka Streams' DSL.
Inner and left joins; the foreign key is None for some values (a row that joins nothing)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from deltastreams.devtools.differential import functions as f
from deltastreams.devtools.differential.blocks import Shape, named, Names, sink
from deltastreams.devtools.differential.join_shapes import _draw_table_side, _table_side, draw_joined_chain, joined_chain
from deltastreams.streams import StreamsBuilder


def foreign_key(m: int, null_r: int) -> Callable[[Any], Any]:
    """The letter ``"a"`` + value mod ``m`` (a key of the right table's domain), or None where
    value mod 7 is ``null_r`` (a row that joins nothing)."""
    return lambda v: None if f.num(v) % 7 == null_r else chr(ord("a") + f.num(v) % m)


def build_fk_join(builder: StreamsBuilder, p: dict) -> None:
    left = _table_side(builder, "tin", p["left"])
    right = _table_side(builder, "tin2", p["right"])
    join = p["join"]
    store = {"store_name": join["store_name"]} if "store_name" in join else {}
    operator = left.left_join if join.get("kind") == "left_join" else left.join
    joined = operator(right, foreign_key(join["m"], join["null_r"]), f.joined, **named(join), **store)
    joined = joined_chain(joined, p["post"])
    sink(joined.to_stream(**named(p.get("to_stream"))), p)


def draw_fk_join(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    join: dict[str, Any] = {"kind": rng.choice(("join", "left_join")), "m": rng.randint(2, 5), "null_r": rng.choice((-1, -1, 0, 3))} | names.maybe("fk-join")
    if rng.random() < 0.4:
        join["store_name"] = f"fk-store-{next(names.counter)}"
    return {
        "left": _draw_table_side(rng, names),
        "right": _draw_table_side(rng, names),
        "join": join,
        "post": draw_joined_chain(rng, names, rng.choice((0, 0, 1, 2))),
        "to_stream": names.maybe("to-stream"),
        "sink": names.maybe("sink"),
    }


FK_JOIN = Shape("fk_join", build_fk_join, draw_fk_join, inputs=("tin", "tin2"), tables=("tin", "tin2"))
