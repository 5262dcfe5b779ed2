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
from pathlib import Path

import pyarrow as pa
from deltalake.exceptions import TableNotFoundError

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.jobs.operations_cli import OPERATIONS_COMMANDS, add_query_command, add_reset_command, add_status_command, run_operations_command
from deltastreams.jobs.pageview import INPUT_TOPIC, VALUE_TYPE
from deltastreams.jobs.roots import require_root
from deltastreams.sinks import use_storage_options
from deltastreams.streams import StreamsBuilder
from deltastreams.topology.graph import Topology

APPLICATION_ID = "user-counts"
OUTPUT_TOPIC = "user-view-counts"


def build_topology() -> Topology:
    builder = StreamsBuilder()
    views = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=VALUE_TYPE)
    counts = views.repartition(name="views-by-user").group_by_key().count()
    counts.to_stream().to(OUTPUT_TOPIC, key_column="user_id", value_column="count")
    return builder.build()


def config_from(args: argparse.Namespace) -> StreamsConfig:
    settings = {
        "application_id": APPLICATION_ID,
        "root": args.root,
        "commit_interval_ms": args.commit_interval_ms,
        "num_partitions": args.partitions,
        "max_records_per_batch": args.max_records_per_batch,
    }
    if getattr(args, "metrics_port", None) is not None:
        settings["metrics_port"] = args.metrics_port
    for item in args.set or ():
        key, _, value = item.partition("=")
        settings[key] = value
    return StreamsConfig.load(settings)


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
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.user_counts", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the job")
    run.add_argument("--root", required=True)
    run.add_argument("--partitions", type=int, default=6, help="partitions of the repartition topic: tasks of the counting sub-topology")
    run.add_argument("--commit-interval-ms", type=int, default=1000)
    run.add_argument("--max-records-per-batch", type=int, default=1_000_000)
    run.add_argument("--until-caught-up", action="store_true")
    run.add_argument("--timeout-s", type=float, default=None)
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="any setting of conf/defaults.toml")
    run.add_argument("--log-file", default=None)
    run.add_argument("--metrics-file", default=None)
    run.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while the job runs (docs/metrics.md; metrics_port)")
    check = commands.add_parser("check", help="compare the counts with the input; exit 1 on any difference")
    check.add_argument("--root", required=True)
    check.add_argument("--set", action="append", metavar="KEY=VALUE", help="storage_options.<KEY>=<value> for an object-store root")
    add_status_command(commands, APPLICATION_ID)
    add_reset_command(commands, APPLICATION_ID)
    add_query_command(commands, APPLICATION_ID)
    args = parser.parse_args(argv)
    if args.command in OPERATIONS_COMMANDS:
        return run_operations_command(args, build_topology)
    if args.command == "run":
        from deltastreams.streams.app import StreamsApp
        from deltastreams.streams.console import run_from_terminal

        app = StreamsApp(build_topology(), config_from(args))
        if args.metrics_file:
            app.progress.write_metrics_to(args.metrics_file)
        return run_from_terminal(app, until_caught_up=args.until_caught_up, timeout_s=args.timeout_s, log_file=args.log_file and Path(args.log_file))
    options = {k.removeprefix("storage_options."): v for k, _, v in (s.partition("=") for s in args.set or ()) if k.startswith("storage_options.")}
    try:
        use_storage_options(StreamsConfig.load({"application_id": APPLICATION_ID, "root": args.root, **{f"storage_options.{k}": v for k, v in options.items()}}).storage_options)
        require_root(args.root)
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        wrong = mismatches(args.root, options or None)
    except TableNotFoundError as e:  # the job has not written its output yet
        print(f"error: {str(e).splitlines()[0]}; run the job first", file=sys.stderr)
        return 1
    for line in wrong[:20]:
        print(line)
    print(f"{len(wrong)} users counted wrong", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
