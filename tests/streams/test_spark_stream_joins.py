"""Stream-stream joins on real Spark and Delta tables, against an independent computation.

Timestamps run forward with bounded disorder (less than the grace period), so no record is too
late for its partners and the join's result is a set computable with plain loops: every pair of
records with the same key at most ``difference`` apart, and (left and outer joins) every record
that has no such partner, joined with None. A record far in the future, in every partition, closes
all windows at the end, so every non-joined record must have been emitted, once."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import JoinWindows, StreamsBuilder
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark

DIFFERENCE, GRACE, DISORDER = 40, 30, 20


def generate(rng, side, start, count, keys):
    """``(key, value, timestamp)``: timestamps rise by 0-4 per record, each shifted back by up to
    DISORDER."""
    rows, clock = [], start
    for i in range(count):
        clock += rng.randrange(5)
        rows.append((f"k{rng.randrange(keys)}", f"{side}{start}-{i}", max(0, clock - rng.randrange(DISORDER))))
    return rows, clock


def append(root, topic, rows):
    Topic.open(root, topic).append(
        pa.table({"key": [r[0] for r in rows], "value": [r[1] for r in rows], "timestamp": pa.array([r[2] for r in rows], pa.int64())})
    )


def expected_results(lefts, rights, kind):
    out, matched_left, matched_right = [], set(), set()
    for lk, lv, lt in lefts:
        for rk, rv, rt in rights:
            if lk == rk and abs(lt - rt) <= DIFFERENCE:
                out.append((lk, f"{lv}|{rv}"))
                matched_left.add(lv)
                matched_right.add(rv)
    if kind in ("left_join", "outer_join"):
        out += [(k, f"{v}|None") for k, v, _ in lefts if v not in matched_left]
    if kind == "outer_join":
        out += [(k, f"None|{v}") for k, v, _ in rights if v not in matched_right and not k.startswith("flush")]
    return Counter(out)


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_joined_pairs_and_closed_non_joined_records_match_an_independent_computation(spark, tmp_path, kind):
    root, rng = str(tmp_path), random.Random(hash(kind) % 997)
    for topic in ("left", "right"):
        create_topic(root, topic, partitions=2, key_type=pa.string(), value_type=pa.string())
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(DIFFERENCE, GRACE)
    getattr(builder.stream("left"), kind)(builder.stream("right"), lambda a, b: f"{a}|{b}", windows).to("joined")
    config = StreamsConfig.load({"application_id": "stream-joins", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 60})
    lefts, rights, clock = [], [], 0
    for run in range(3):
        for _ in range(2):
            left_rows, left_clock = generate(rng, "L", clock, 80, keys=25)
            right_rows, right_clock = generate(rng, "R", clock, 80, keys=25)
            append(root, "left", left_rows)
            append(root, "right", right_rows)
            lefts += left_rows
            rights += right_rows
            clock = max(left_clock, right_clock)
        if run == 2:  # close every window: a far-future record in each partition of the right side
            flush = [(f"flush{i}", f"F{i}", clock + 10_000) for i in range(8)]
            append(root, "right", flush)
            rights += flush
            assert set(Topic.open(root, "right").read().filter(pa.compute.starts_with(pa.compute.cast(
                Topic.open(root, "right").read()["key"], pa.string()), "flush"))["partition"].to_pylist()) == {0, 1}
        StreamsApp(builder.build(), config, spark=spark).run(until_caught_up=True, timeout_s=240)

    output = Topic.open(root, "joined").read()
    actual = Counter(zip(output["key"].to_pylist(), output["value"].to_pylist(), strict=True))
    assert actual == expected_results(lefts, rights, kind)
