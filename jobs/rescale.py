"""Rescale a stopped application's repartition topics and changelogs to N partitions (Kafka Streams
cannot without a reset): see :mod:`deltastreams.streams.rescale` for what moves and why it is crash-safe.

    python -m deltastreams.jobs.rescale --root /tmp/pv --application-id pageview --partitions 6

``--topology module:function`` builds the application's topology (default: the pageview job's,
``deltastreams.jobs.pageview:build_topology``); the rescale needs it to know the stores and who reads what.
Running the command again after a crash (or a kill -9) finishes what the first run started; the
application refuses to start until then.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from deltastreams.conf import StreamsConfig
from deltastreams.streams.errors import DeltaStreamsError
from deltastreams.streams.rescale import rescale


def load_topology(spec: str):
    module, _, function = spec.partition(":")
    if not function:
        raise SystemExit(f"error: --topology is module:function, got {spec!r}")
    return getattr(importlib.import_module(module), function)()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.jobs.rescale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--application-id", required=True)
    parser.add_argument("--partitions", type=int, required=True, help="the new partition count of the repartition topics and their readers' changelogs")
    parser.add_argument("--topology", default="deltastreams.jobs.pageview:build_topology", help="module:function returning the application's topology")
    parser.add_argument("--force", action="store_true", help="rescale although a holder's heartbeat is fresh: only for an instance known dead")
    args = parser.parse_args(argv)
    config = StreamsConfig.load({"application_id": args.application_id, "root": args.root})
    try:
        report = rescale(load_topology(args.topology), config, args.partitions, force=args.force)
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {
                "partitions": report.partitions,
                "repartition_records": report.repartition_records,
                "store_entries": report.store_entries,
                "stream_times": report.stream_times,
                "resumed": report.resumed,
                "seconds": round(report.seconds, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
