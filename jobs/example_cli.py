"""The ``run`` subcommand the enrich, clicks and dedup examples share: the same options, the same
settings, run in the terminal until caught up or stopped."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from conf import StreamsConfig
from streams import Topology


def add_run_command(commands) -> argparse.ArgumentParser:
    run = commands.add_parser("run", help="run the job on Spark")
    run.add_argument("--root", required=True)
    run.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    run.add_argument("--commit-interval-ms", type=int, default=1000)
    run.add_argument("--max-records-per-batch", type=int, default=1_000_000)
    run.add_argument("--until-caught-up", action="store_true")
    run.add_argument("--timeout-s", type=float, default=None)
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="any setting of conf/defaults.toml")
    return run


def run_example(args: argparse.Namespace, application_id: str, build_topology: Callable[[], Topology]) -> int:
    from streams.app import StreamsApp
    from streams.console import run_from_terminal

    settings = {
        "application_id": application_id,
        "root": args.root,
        "processing_guarantee": args.guarantee,
        "commit_interval_ms": args.commit_interval_ms,
        "max_records_per_batch": args.max_records_per_batch,
    }
    for item in args.set or ():
        key, _, value = item.partition("=")
        settings[key] = value
    return run_from_terminal(StreamsApp(build_topology(), StreamsConfig.load(settings)), until_caught_up=args.until_caught_up, timeout_s=args.timeout_s)
