"""Pageviews counted per user: a job whose state is as large as its key space (100k users by
default), for what state costs on a cluster: where each task's stores are, what a moved task
reads back, how a standby copy helps (:mod:`deltastreams.devtools.bench.cluster_locality`).

    python -m deltastreams.devtools.bench.user_counts run --root R --partitions 6 --until-caught-up --metrics-file m.jsonl
    python -m deltastreams.devtools.bench.user_counts check --root R     # the counts against the input, independently
    python -m deltastreams.devtools.bench.user_counts status --root R    # or reset --root R --to-earliest (docs/operations.md)

The topology: ``pageview-events`` (keyed by user) -> repartition (``--partitions`` tasks) ->
``group_by_key().count()`` -> ``user-view-counts``. Input comes from ``python -m deltastreams.jobs.pageview
generate``. ``check`` reads both topics with delta-rs alone (no project code) and compares each
user's last count with the number of that user's events: exactly once, or it exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import pyarrow as pa
from deltalake.exceptions import TableNotFoundError

from deltastreams.jobs.pageview import INPUT_TOPIC, VALUE_TYPE
from deltastreams.streams import StreamsApp, StreamsBuilder
from deltastreams.topology.graph import Topology

APPLICATION_ID = "user-counts"
OUTPUT_TOPIC = "user-view-counts"


def build_topology() -> Topology:
    builder = StreamsBuilder()
    views = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=VALUE_TYPE)
    counts = views.repartition(name="views-by-user").group_by_key().count()
    counts.to_stream().to(OUTPUT_TOPIC, key_column="user_id", value_column="count")
    return builder.build()


def _table(root: str, name: str, storage_options: dict[str, str] | None) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(f"{root.rstrip('/')}/topics/{name}", storage_options=storage_options).to_pyarrow_table()


def expected_counts(root: str, storage_options: dict[str, str] | None = None) -> Counter:
    """Events per user in the input (delta-rs only): the counts the job must end with."""
    return Counter(_table(root, INPUT_TOPIC, storage_options).column("user_id").to_pylist())


def mismatches(root: str, storage_options: dict[str, str] | None = None) -> list[str]:
    """Users whose last committed count differs from their number of input events (empty: the
    output is exactly once). Reads the Delta tables with delta-rs only."""
    expected = expected_counts(root, storage_options)
    output = _table(root, OUTPUT_TOPIC, storage_options).select(["partition", "offset", "user_id", "count"]).to_pylist()
    last: dict[str, tuple[int, int]] = {}
    for row in output:  # one user's revisions share a partition: the highest offset is the last
        if row["user_id"] not in last or row["offset"] > last[row["user_id"]][0]:
            last[row["user_id"]] = (row["offset"], row["count"])
    got = {user: count for user, (_, count) in last.items()}
    wrong = [f"{user}: counted {got.get(user)}, {n} events" for user, n in expected.items() if got.get(user) != n]
    wrong += [f"{user}: counted {got[user]}, no events" for user in got.keys() - expected.keys()]
    return sorted(wrong)


def main(argv: list[str] | None = None) -> int:
    cli = StreamsApp.command_line(
        build_topology, {"application_id": APPLICATION_ID, "num_partitions": 6}, prog="python -m deltastreams.devtools.bench.user_counts", description=__doc__
    )

    def check(options: argparse.Namespace) -> int:
        config = cli.config(options, existing_root=True)
        storage_options = dict(config.storage_options) or None
        try:
            wrong = mismatches(config.root, storage_options)
        except TableNotFoundError as e:  # the job has not written its output yet
            print(f"error: {str(e).splitlines()[0]}; run the job first", file=sys.stderr)
            return 1
        for line in wrong[:20]:
            print(line)
        print(f"{len(wrong)} users counted wrong", file=sys.stderr)
        return 1 if wrong else 0

    checking = cli.add_command("check", "compare the counts with the input; exit 1 on any difference", check)
    checking.add_argument("--root", required=True)
    checking.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="storage_options.<KEY>=<value> for an object-store root")
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
