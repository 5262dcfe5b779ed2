"""What the enrich, clicks and dedup examples share: the ``run`` subcommand (the same options,
the same settings, run in the terminal until caught up or stopped), ``status`` and ``reset``
(:mod:`deltastreams.jobs.operations_cli`), and for the examples whose
output is a set of records, reading and printing that set and counting the rounds generated."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable

from deltastreams.conf import StreamsConfig
from deltastreams.jobs.operations_cli import OPERATIONS_COMMANDS
from deltastreams.streams import Topology


def add_run_command(commands) -> argparse.ArgumentParser:
    run = commands.add_parser("run", help="run the job on Spark")
    run.add_argument("--root", required=True)
    run.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    run.add_argument("--commit-interval-ms", type=int, default=1000)
    run.add_argument("--max-records-per-batch", type=int, default=1_000_000)
    run.add_argument("--until-caught-up", action="store_true")
    run.add_argument("--timeout-s", type=float, default=None)
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="any setting of conf/defaults.toml")
    run.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while the job runs (docs/metrics.md; metrics_port)")
    return run


def add_operations_commands(commands, application_id: str) -> None:
    """``status``, ``reset``, ``query`` and ``skip`` for the example ``application_id``."""
    from deltastreams.jobs.operations_cli import add_query_command, add_reset_command, add_skip_command, add_status_command

    add_status_command(commands, application_id)
    add_reset_command(commands, application_id)
    add_query_command(commands, application_id)
    add_skip_command(commands, application_id)


def run_operations(args: argparse.Namespace, build_topology: Callable[[], Topology]) -> int:
    from deltastreams.jobs.operations_cli import run_operations_command

    return run_operations_command(args, build_topology)


def run_example(args: argparse.Namespace, application_id: str, build_topology: Callable[[], Topology]) -> int:
    from deltastreams.streams.app import StreamsApp
    from deltastreams.streams.console import run_from_terminal

    settings = {
        "application_id": application_id,
        "root": args.root,
        "processing_guarantee": args.guarantee,
        "commit_interval_ms": args.commit_interval_ms,
        "max_records_per_batch": args.max_records_per_batch,
    }
    if args.metrics_port is not None:
        settings["metrics_port"] = args.metrics_port
    for item in args.set or ():
        key, _, value = item.partition("=")
        settings[key] = value
    return run_from_terminal(StreamsApp(build_topology(), StreamsConfig.load(settings)), until_caught_up=args.until_caught_up, timeout_s=args.timeout_s)


def read_pairs(root: str, topic: str) -> Counter:
    """``(key, value)`` of every record of ``topic``, with multiplicity (empty if it does not
    exist yet)."""
    from deltastreams.sinks import Topic

    if not Topic.exists(root, topic):
        return Counter()
    table = Topic.open(root, topic).read()
    return Counter(zip(table["key"].to_pylist(), table["value"].to_pylist(), strict=True))


def print_pairs(pairs: Counter) -> None:
    """One ``key,value`` line per record, sorted."""
    for (key, value), n in sorted(pairs.items()):
        for _ in range(n):
            print(f"{key},{value}")


def rounds_done(root: str, topic: str, start_ms: int, round_ms: int) -> int:
    """Rounds already appended to ``topic``, each ``round_ms`` of event time from ``start_ms``."""
    from deltastreams.sinks import Topic

    if not Topic.exists(root, topic):
        return 0
    stamps = Topic.open(root, topic).read().column("timestamp").to_pylist()
    return 0 if not stamps else int((max(stamps) - start_ms) // round_ms) + 1
