"""Click attribution, a stream-stream join: each ad impression is joined with the clicks of the
same user within 10 seconds either side; an impression nobody clicked goes out once its window
has closed, joined with None.

``ad-impressions`` (keyed by user) -> left_join(``ad-clicks``, JoinWindows 10 s, grace 5 s) ->
``attributed-impressions`` (key: user, value: ``"<impression>|<click or None>"``).

    python -m deltastreams.jobs.clicks generate --root /tmp/clicks --rounds 5
    python -m deltastreams.jobs.clicks run --root /tmp/clicks --until-caught-up --max-records-per-batch 1
    python -m deltastreams.jobs.clicks close --root /tmp/clicks      # far-future clicks: every window closes
    python -m deltastreams.jobs.clicks run --root /tmp/clicks --until-caught-up --max-records-per-batch 1
    python -m deltastreams.jobs.clicks results --root /tmp/clicks [--reference]

``generate`` appends rounds of 20 s of event time: impressions spread over the round, one click per
impression, 0-15 s after it (so about a third miss their impression's window, though they may hit
another impression of the same user). :func:`reference_pairs` computes the join independently
from the input topics: every (impression, click) pair of a user at most 10 s apart, and every
impression without one. Once ``close`` has run and the job has caught up, the output must be
exactly that, each pair once.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np
import pyarrow as pa

from deltastreams.jobs.example_output import print_pairs, read_pairs
from deltastreams.jobs.example_output import rounds_done as example_rounds_done
from deltastreams.streams import JoinWindows, StreamsApp, StreamsBuilder, Topology

IMPRESSIONS_TOPIC = "ad-impressions"
CLICKS_TOPIC = "ad-clicks"
OUTPUT_TOPIC = "attributed-impressions"
APPLICATION_ID = "clicks"
WINDOW_MS, GRACE_MS, ROUND_MS, SLICE_MS = 10_000, 5_000, 20_000, 5_000
START_MS = 1_700_000_000_000
USERS = 300


def build_topology() -> Topology:
    builder = StreamsBuilder()
    impressions = builder.stream(IMPRESSIONS_TOPIC, key_type=pa.string(), value_type=pa.string())
    clicks = builder.stream(CLICKS_TOPIC, key_type=pa.string(), value_type=pa.string())
    impressions.left_join(
        clicks,
        lambda impression, click: f"{impression}|{click}",
        JoinWindows.of_time_difference_and_grace(WINDOW_MS, GRACE_MS),
        name="attribution",
        store_name="attribution",
    ).to(OUTPUT_TOPIC, key_column="user", value_column="attribution")
    return builder.build()


def _topic(root: str, name: str, partitions: int):
    from deltastreams.sinks import Topic, create_topic

    if Topic.exists(root, name):
        return Topic.open(root, name)
    return create_topic(root, name, partitions=partitions, key_type=pa.string(), value_type=pa.string(), key_column="user")


def _append(topic, keys, values, stamps) -> None:
    order = np.argsort(stamps, kind="stable")
    topic.append(
        pa.table(
            {
                "key": pa.array([keys[i] for i in order], pa.string()),
                "value": pa.array([values[i] for i in order], pa.string()),
                "timestamp": pa.array(np.asarray(stamps)[order], pa.int64()),
            }
        )
    )


def rounds_done(root: str) -> int:
    return example_rounds_done(root, IMPRESSIONS_TOPIC, START_MS, ROUND_MS)


def generate(root: str, *, rounds: int, per_round: int = 1000, seed: int = 0, partitions: int = 2) -> None:
    """Append ``rounds`` rounds of ``per_round`` impressions and as many clicks, in time order:
    each round in four 5-second slices, a slice's impressions then its clicks, one Delta version
    each. Run with ``max_records_per_batch = 1`` and a batch takes one slice of both topics, so
    the job sees events in time order (what :func:`reference_pairs` assumes)."""
    impressions, clicks = _topic(root, IMPRESSIONS_TOPIC, partitions), _topic(root, CLICKS_TOPIC, partitions)
    done = rounds_done(root)
    for r in range(done, done + rounds):
        rng = np.random.default_rng([seed, r])
        start = START_MS + r * ROUND_MS
        users = np.array([f"user-{u}" for u in rng.integers(0, USERS, per_round)])
        shown = start + rng.integers(0, ROUND_MS, per_round)
        clicked = np.minimum(shown + rng.integers(0, 15_001, per_round), start + ROUND_MS - 1)
        for s in range(start, start + ROUND_MS, SLICE_MS):
            for topic, stamps, prefix in ((impressions, shown, "i"), (clicks, clicked, "c")):
                chosen = np.flatnonzero((stamps >= s) & (stamps < s + SLICE_MS))
                _append(topic, list(users[chosen]), [f"{prefix}{r}.{i}" for i in chosen], stamps[chosen])


def close(root: str, *, partitions: int = 2) -> None:
    """Far-future clicks of users nobody saw, enough for every partition: they move each task's
    stream time past every window, so every impression still waiting goes out."""
    clicks = _topic(root, CLICKS_TOPIC, partitions)
    end = START_MS + (rounds_done(root) + 10) * ROUND_MS
    count = 8 * partitions
    _append(clicks, [f"closer-{i}" for i in range(count)], [f"x{i}" for i in range(count)], [end] * count)


def reference_pairs(root: str) -> Counter:
    """``(user, "<impression>|<click or None>")`` of the join, computed with pandas from the
    input topics (the closing clicks match nothing)."""
    import pandas as pd

    from deltastreams.sinks import Topic

    def frame(topic: str, name: str) -> pd.DataFrame:
        table = Topic.open(root, topic).read()
        return pd.DataFrame({"user": table["key"].to_pylist(), name: table["value"].to_pylist(), f"{name}_ts": table["timestamp"].to_pylist()})

    impressions, clicks = frame(IMPRESSIONS_TOPIC, "impression"), frame(CLICKS_TOPIC, "click")
    pairs = impressions.merge(clicks, on="user")
    pairs = pairs[(pairs["impression_ts"] - pairs["click_ts"]).abs() <= WINDOW_MS]
    unmatched = impressions[~impressions["impression"].isin(pairs["impression"])]
    out = Counter(zip(pairs["user"], pairs["impression"] + "|" + pairs["click"], strict=True))
    out.update(zip(unmatched["user"], unmatched["impression"] + "|None", strict=True))
    return out


def read_results(root: str) -> Counter:
    return read_pairs(root, OUTPUT_TOPIC)


def main(argv: list[str] | None = None) -> int:
    cli = StreamsApp.command_line(build_topology, {"application_id": APPLICATION_ID}, prog="python -m deltastreams.jobs.clicks", description=__doc__)

    def generate_command(options: argparse.Namespace) -> None:
        generate(cli.config(options).root, rounds=options.rounds, per_round=options.per_round, seed=options.seed)
        print(f"appended {options.rounds} rounds under {options.root}", file=sys.stderr)

    gen = cli.add_command("generate", "append rounds of impressions and clicks", generate_command)
    gen.add_argument("--root", required=True)
    gen.add_argument("--rounds", type=int, default=5)
    gen.add_argument("--per-round", type=int, default=1000)
    gen.add_argument("--seed", type=int, default=0)
    closing = cli.add_command("close", "append far-future clicks that close every window", lambda options: close(cli.config(options, existing_root=True).root))
    closing.add_argument("--root", required=True)

    def results_command(options: argparse.Namespace) -> None:
        root = cli.config(options, existing_root=True).root
        print_pairs(reference_pairs(root) if options.reference else read_results(root))

    results = cli.add_command("results", "print the attributed impressions, one per line, sorted", results_command)
    results.add_argument("--root", required=True)
    results.add_argument("--reference", action="store_true", help="the pandas computation instead of the job's output")
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
