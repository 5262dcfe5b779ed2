"""Enrichment, the most common Kafka Streams pattern: pageviews joined with a ``users`` table
(each user's region, updated while the job runs), counted per region in tumbling windows.

``pageview-events`` (keyed by user_id) -> left_join(``users`` table: user_id -> {region}) ->
map to key = region ("unknown" without a row) -> group_by_key -> windowed_by(5 s, grace) ->
count -> to_stream -> ``pageviews-per-region`` (columns region, window_start, window_end, count).

    python -m deltastreams.jobs.enrich generate --root /tmp/en --rounds 5 --events-per-round 20000
    python -m deltastreams.jobs.enrich run --root /tmp/en --until-caught-up
    python -m deltastreams.jobs.enrich results --root /tmp/en
    python -m deltastreams.jobs.enrich describe

``generate`` appends in rounds: each round first moves some users to another region (the table
update is stamped with the start of the round), then appends the round's pageviews (stamped
after it). A pageview is counted in the region its user had when the view happened, i.e. the
latest ``users`` update with an earlier timestamp: :func:`reference_counts` computes exactly that
with pandas, independently of the job, as long as the job sees each round's table updates
together with or before its views (true for ``run --until-caught-up`` after ``generate``, and
for runs between rounds).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pyarrow as pa

from deltastreams.jobs.example_output import print_table
from deltastreams.jobs.pageview_data import START_MS, VALUE_TYPE, generate_events
from deltastreams.streams import StreamsApp, StreamsBuilder, TimeWindows, Topology

VIEWS_TOPIC = "pageview-events"
USERS_TOPIC = "users"
OUTPUT_TOPIC = "pageviews-per-region"
APPLICATION_ID = "enrich"
REGIONS = ("africa", "americas", "asia", "europe", "oceania")
USER_TYPE = pa.struct([("region", pa.string())])
USERS = 1_000
ROUND_MS = 20_000
"""Event time one round spans: its views are spread over it, its table update opens it."""


def build_topology(*, window_ms: int = 5000, grace_ms: int = 10_000) -> Topology:
    builder = StreamsBuilder()
    views = builder.stream(VIEWS_TOPIC, key_type=pa.string(), value_type=VALUE_TYPE)
    users = builder.table(USERS_TOPIC, key_type=pa.string(), value_type=USER_TYPE, name="users-store")
    (
        views.left_join(users, lambda view, user: user["region"] if user is not None else "unknown")
        .map(lambda user_id, region: (region, 1))
        .group_by_key(name="views-by-region")
        .windowed_by(TimeWindows.of_size(window_ms).grace(grace_ms))
        .count(name="views-per-region-store")
        .to_stream()
        .to(OUTPUT_TOPIC, key_column="region", value_column="count")
    )
    return builder.build()


def _topic(root: str, name: str, value_type: pa.DataType, partitions: int):
    from deltastreams.sinks import Topic, create_topic

    if Topic.exists(root, name):
        return Topic.open(root, name)
    return create_topic(root, name, partitions=partitions, key_type=pa.string(), value_type=value_type, key_column="user_id")


def generate(root: str, *, rounds: int, events_per_round: int, seed: int = 0, partitions: int = 2, moves_per_round: int = 200) -> None:
    """Append ``rounds`` rounds: the first round registers every user; each later round moves
    ``moves_per_round`` users (and deletes a few, whose views then count as "unknown")."""
    users, views = _topic(root, USERS_TOPIC, USER_TYPE, partitions), _topic(root, VIEWS_TOPIC, VALUE_TYPE, partitions)
    done = _rounds_done(users)
    for r in range(done, done + rounds):
        rng = np.random.default_rng([seed, r])
        start = START_MS + r * ROUND_MS
        ids = np.arange(USERS) if r == 0 else rng.choice(USERS, moves_per_round, replace=False)
        regions = [REGIONS[i] for i in rng.integers(0, len(REGIONS), len(ids))]
        values = [{"region": region} for region in regions]
        if r > 0:
            for i in range(0, len(values), 25):  # every 25th moved user is deleted instead
                values[i] = None
        users.append(
            pa.table(
                {
                    "key": pa.array([f"user-{i}" for i in ids], pa.string()),
                    "value": pa.array(values, USER_TYPE),
                    "timestamp": pa.array(np.full(len(ids), start), pa.int64()),
                }
            )
        )
        round_views = generate_events(events_per_round, seed=seed, late_fraction=0.0, users=USERS, first_index=r * events_per_round, events_per_second=events_per_round * 1000 // ROUND_MS)
        offset = START_MS + r * ROUND_MS + 1 - round_views.column("timestamp")[0].as_py()
        stamps = pa.array(np.asarray(round_views.column("timestamp")) + offset, pa.int64())
        views.append(round_views.set_column(2, "timestamp", stamps))


def _rounds_done(users) -> int:
    table = users.read()
    if table.num_rows == 0:
        return 0
    return int((max(table.column("timestamp").to_pylist()) - START_MS) // ROUND_MS) + 1


def reference_counts(root: str, *, window_ms: int = 5000) -> pa.Table:
    """Views per region per window, computed with pandas from the input topics: each view takes
    the region of its user's latest ``users`` update with an earlier timestamp. Rounds' views
    are in timestamp order and late-free, so no window closes on a record it should count."""
    import pandas as pd

    from deltastreams.sinks import Topic

    views = Topic.open(root, VIEWS_TOPIC).read().select(["timestamp", "key"]).to_pandas().rename(columns={"key": "user_id"})
    users = Topic.open(root, USERS_TOPIC).read()
    users = pd.DataFrame(
        {
            "timestamp": users.column("timestamp").to_pylist(),
            "user_id": users.column("key").to_pylist(),
            "region": [None if v is None else v["region"] for v in users.column("value").to_pylist()],
        }
    )
    views = views.sort_values("timestamp", kind="stable")
    users = users.sort_values("timestamp", kind="stable")
    joined = pd.merge_asof(views, users, on="timestamp", by="user_id", allow_exact_matches=False)
    joined["region"] = joined["region"].fillna("unknown")
    joined["window_start"] = joined["timestamp"] // window_ms * window_ms
    counts = joined.groupby(["region", "window_start"]).size().reset_index(name="count")
    counts["window_end"] = counts["window_start"] + window_ms
    return pa.Table.from_pandas(counts[["region", "window_start", "window_end", "count"]], preserve_index=False).sort_by(
        [("window_start", "ascending"), ("region", "ascending")]
    )


def read_results(root: str) -> pa.Table:
    """The latest revision per (region, window)."""
    from deltastreams.sinks import Topic

    empty = pa.schema([("region", pa.string()), ("window_start", pa.int64()), ("window_end", pa.int64()), ("count", pa.int64())]).empty_table()
    if not Topic.exists(root, OUTPUT_TOPIC):
        return empty
    table = Topic.open(root, OUTPUT_TOPIC).read()  # records: key = region, value = count
    table = pa.table({"region": table["key"], "window_start": table["window_start"], "window_end": table["window_end"], "count": table["value"]})
    # Revisions of one window share a key, hence a partition: the last by offset is the latest.
    table = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    last = table.group_by(["region", "window_start"]).aggregate([("_row", "max")])
    latest = table.take(last["_row_max"]).select(["region", "window_start", "window_end", "count"])
    return latest.cast(empty.schema).sort_by([("window_start", "ascending"), ("region", "ascending")])


def main(argv: list[str] | None = None) -> int:
    cli = StreamsApp.command_line(build_topology, {"application_id": APPLICATION_ID}, prog="python -m deltastreams.jobs.enrich", description=__doc__)

    def generate_command(options: argparse.Namespace) -> None:
        generate(cli.config(options).root, rounds=options.rounds, events_per_round=options.events_per_round, seed=options.seed)
        print(f"appended {options.rounds} rounds under {options.root}", file=sys.stderr)

    gen = cli.add_command("generate", "append rounds of users updates and pageviews", generate_command)
    gen.add_argument("--root", required=True)
    gen.add_argument("--rounds", type=int, default=5)
    gen.add_argument("--events-per-round", type=int, default=20_000)
    gen.add_argument("--seed", type=int, default=0)

    def results_command(options: argparse.Namespace) -> None:
        root = cli.config(options, existing_root=True).root
        print_table(reference_counts(root) if options.reference else read_results(root))

    results = cli.add_command("results", "print the counts per region and window as CSV", results_command)
    results.add_argument("--root", required=True)
    results.add_argument("--reference", action="store_true", help="the pandas computation instead of the job's output")
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
