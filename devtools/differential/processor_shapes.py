"""Shapes of record routing and user code: ``merge_split`` (two streams merged, then split into
branches, each to its own output topic) and ``processor`` (the Processor API: a user processor
with a key-value store and a stream-time punctuation). Built exactly as
``jvm/src/main/java/deltastreams/oracle/ProcessorShapes.java`` builds them with Kafka Streams'."""

from __future__ import annotations

import random
from typing import Any

from deltastreams.devtools.differential import functions as f
from deltastreams.devtools.differential.blocks import CHAIN_OPS, KEY_PRESERVING_OPS, Shape, named, Names, chain, draw_chain, sink, source
from deltastreams.streams import Branched, StreamsBuilder
from deltastreams.streams.processor import Stores

BRANCH_OUTPUTS = ("out", "out2", "out3", "out4")
"""A split's branches write to these, in branch order (the default branch last)."""

# -- merge and split ---------------------------------------------------------------------------


def build_merge_split(builder: StreamsBuilder, p: dict) -> None:
    left = chain(source(builder, "in", p["left"]), p["left"]["pre"])
    right = chain(source(builder, "in2", p["right"]), p["right"]["pre"])
    split = left.merge(right, **named(p["merge"])).split(**named(p["split"]))
    by_consumer = p["via"] == "consumer"
    branches = [*p["branches"], *([p["default"]] if p["default"] is not None else [])]
    sinks = p["sinks"]

    def branched(i: int) -> Branched | None:
        name = named(branches[i])
        if by_consumer:  # the branch's sink is added with the branch
            return Branched.with_consumer(lambda s: s.to(BRANCH_OUTPUTS[i], **named(sinks[i])), **name)
        return Branched.with_name(name["name"]) if name else None

    for i, b in enumerate(p["branches"]):
        split.branch(f.filter_(b["m"], b["r"], b["keep_null"]), branched(i))
    if p["default"] is not None:
        result = split.default_branch(branched(len(branches) - 1))
    else:
        result = split.no_default_branch()
    if not by_consumer:  # the sinks are added after every branch, in branch order
        for i, stream in enumerate(result.values()):
            stream.to(BRANCH_OUTPUTS[i], **named(sinks[i]))


def draw_merge_split(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    p: dict[str, Any] = {
        "left": {"source": names.maybe("source"), "pre": draw_chain(rng, names, rng.randint(0, 2), CHAIN_OPS)},
        "right": {"source": names.maybe("source"), "pre": draw_chain(rng, names, rng.randint(0, 2), CHAIN_OPS)},
        "merge": names.maybe("merge"),
        "split": names.maybe("split-"),
        "via": rng.choice(("map", "consumer")),
    }
    default = rng.random() < 0.6
    count = rng.randint(1, len(BRANCH_OUTPUTS) - (1 if default else 0))
    p["branches"] = []
    for _ in range(count):
        m = rng.randint(2, 4)
        p["branches"].append({"m": m, "r": rng.randrange(m), "keep_null": rng.random() < 0.5} | names.maybe("branch"))
    p["default"] = names.maybe("default") if default else None
    p["sinks"] = [names.maybe("sink") for _ in range(count + (1 if default else 0))]
    return p


# -- the Processor API -------------------------------------------------------------------------


def build_processor(builder: StreamsBuilder, p: dict) -> None:
    store = p["store"]
    supplier = Stores.persistent_key_value_store(store["name"]) if store["persistent"] else Stores.in_memory_key_value_store(store["name"])
    if p["store_first"]:
        builder.add_state_store(Stores.key_value_store_builder(supplier))
    stream = chain(source(builder, "in", p), p["pre"])
    if not p["store_first"]:
        builder.add_state_store(Stores.key_value_store_builder(supplier))
    proc = p["processor"]

    def processor() -> f.Summing:
        return f.Summing(store["name"], proc["interval_ms"], proc["forward_each"], proc["clear"], proc["fixed_key"])

    operator = stream.process_values if proc["fixed_key"] else stream.process
    out = operator(processor, store["name"], **named(proc))
    if p.get("post") is not None:  # a grouping after the processor: repartitioned if it may change keys
        out = out.group_by_key().count(**named(p["post"])).to_stream()
    sink(out, p)


def draw_processor(rng: random.Random) -> dict:
    names = Names(rng, rng.choice((0.0, 0.3, 1.0)))
    return {
        "store": {"name": rng.choice(("sums", "totals")), "persistent": rng.random() < 0.5},
        "store_first": rng.random() < 0.5,
        "source": names.maybe("source"),
        "pre": draw_chain(rng, names, rng.randint(0, 1), KEY_PRESERVING_OPS),
        "processor": {
            "fixed_key": rng.random() < 0.4,
            "interval_ms": rng.choice((0, 3, 5, 10)),
            "forward_each": rng.random() < 0.7,
            "clear": rng.random() < 0.5,
        } | names.maybe("processor"),
        "post": names.maybe("store") if rng.random() < 0.25 else None,
        "sink": names.maybe("sink"),
    }


MERGE_SPLIT = Shape("merge_split", build_merge_split, draw_merge_split, inputs=("in", "in2"), outputs=BRANCH_OUTPUTS)
PROCESSOR = Shape("processor", build_processor, draw_processor)
