"""The ``cogroup`` shape: two or three input streams (``in``, ``in2``, ``in3``), each with its own
stateless pre-chain (possibly re-keying, so a repartition topic of its own) and grouping,
cogrouped with an aggregator of its own into one aggregate, optionally windowed (tumbling,
hopping, sliding, session, with grace), the aggregate optionally named (store, processors),
optionally suppressed; to_stream, an optional post map, to("out"). Built exactly as
``jvm/src/main/java/deltastreams/oracle/CogroupShapes.java`` builds it with Kafka's DSL."""

from __future__ import annotations

import random
from typing import Any

from deltastreams.devtools.differential import blocks as base
from deltastreams.devtools.differential import functions as f
from deltastreams.streams import SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows

TOPICS = ("in", "in2", "in3")
_TAGS = ("+", "*", "/")
"""Each input's aggregator appends its own tag and the value, so the fold order and which input
each record came from both show in the aggregate."""


def build_cogroup(builder: StreamsBuilder, p: dict) -> None:
    cogrouped = None
    for input_ in p["inputs"]:
        stream = base.chain(base.source(builder, input_["topic"], input_), input_["pre"])
        grouping = input_["grouping"]
        if grouping["by"] == "key":
            grouped = stream.group_by_key(**base.named(grouping))
        else:
            grouped = stream.group_by(f.key_from_value("g", grouping["m"]), **base.named(grouping))
        aggregator = f.tagged(input_["tag"])
        cogrouped = grouped.cogroup(aggregator) if cogrouped is None else cogrouped.cogroup(grouped, aggregator)
    names = {k: v for k, v in p["aggregate"].items() if k in ("name", "processor_name")}
    w = p["windows"]
    match w["type"]:
        case "none":
            table = cogrouped.aggregate(f.zero, **names)
        case "tumbling" | "hopping":
            spec = TimeWindows.of_size_and_grace(w["size"], w["grace"])
            if w["type"] == "hopping":
                spec = spec.advance_by(w["advance"])
            table = cogrouped.windowed_by(spec).aggregate(f.zero, **names)
        case "sliding":
            table = cogrouped.windowed_by(SlidingWindows.of_time_difference_and_grace(w["difference"], w["grace"])).aggregate(f.zero, **names)
        case "session":
            sessions = SessionWindows.of_inactivity_gap_and_grace(w["gap"], w["grace"])
            table = cogrouped.windowed_by(sessions).aggregate(f.zero, f.merge_sessions, **names)
        case other:
            raise ValueError(f"no windows of type {other!r}")
    if p.get("suppress"):
        table = table.suppress(base.suppressed(p["suppress"]), **base.named(p["suppress"]))
    out = table.to_stream(**base.named(p.get("to_stream")))
    if p.get("post") == "to_strings":
        out = out.map(lambda k, v: (f.key_text(k), v))
    base.sink(out, p)


def draw_cogroup(rng: random.Random) -> dict:
    names = base.Names(rng, rng.choice((0.0, 0.3, 1.0)))
    n = rng.choice((2, 2, 3))
    tags = rng.sample(_TAGS, n)
    inputs = []
    for topic, tag in zip(TOPICS[:n], tags, strict=True):
        ops = ("filter", "map_values", "select_key", "map") if rng.random() < 0.4 else base.KEY_PRESERVING_OPS
        grouping: dict[str, Any] = {"by": "key"} if rng.random() < 0.6 else {"by": "selector", "m": rng.randint(2, 4)}
        inputs.append({
            "topic": topic,
            "source": names.maybe("source"),
            "pre": base.draw_chain(rng, names, rng.randint(0, 2), ops),
            "grouping": grouping | names.maybe("grouping"),
            "tag": tag,
        })
    windows = base.draw_windows(rng)
    p: dict[str, Any] = {
        "topics": list(TOPICS[:n]),
        "inputs": inputs,
        "windows": windows,
        "aggregate": names.maybe("store") | {f"processor_{k}": v for k, v in names.maybe("cogroup").items()},
    }
    if rng.random() < 0.25:
        if windows["type"] != "none" and rng.random() < 0.5:
            p["suppress"] = {"until": "window_close"}
        else:
            p["suppress"] = base.draw_time_limit(rng)
        p["suppress"] |= names.maybe("suppress")
    p["to_stream"] = names.maybe("to-stream")
    if rng.random() < 0.3:
        p["post"] = "to_strings"
    p["sink"] = names.maybe("sink")
    return p
