"""The pageview computation as a plain Spark Structured Streaming job, for the benchmark's
whole-process comparison: what a Spark user would run instead of deltastreams.

    python -m deltastreams.devtools.bench.plain_pageview --root R --events N [--commit-interval-ms 1000] [--max-records-per-batch N]

Reads the input topic's Parquet files with Spark's file source, counts per (5 s window, category)
with a watermark of the grace period, RocksDB state store, update mode, and appends each batch's
updates to a Delta table; exits once all ``--events`` input rows are processed (see
``deltastreams.devtools.bench.baselines.plain_structured_streaming``).
"""

from __future__ import annotations

import argparse
import sys

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.devtools.bench.baselines import plain_structured_streaming
from deltastreams.streams.operations import require_root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.plain_pageview", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--events", type=int, required=True, help="input rows to process before exiting")
    parser.add_argument("--commit-interval-ms", type=int, default=1000)
    parser.add_argument("--max-records-per-batch", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--window-ms", type=int, default=5000)
    parser.add_argument("--grace-ms", type=int, default=10_000)
    args = parser.parse_args(argv)
    try:
        require_root(args.root)
    except DeltaStreamsError as e:
        print(f"error: {e} (generate the input first: python -m deltastreams.jobs.pageview generate --root ...)", file=sys.stderr)
        return 1
    from deltastreams.streams.runtime import spark_session

    spark = spark_session(StreamsConfig.load({"application_id": "plain-pageview"}))
    seconds = plain_structured_streaming(
        spark,
        args.root,
        events=args.events,
        records_per_batch=args.max_records_per_batch,
        interval_ms=args.commit_interval_ms,
        partitions=args.partitions,
        window_ms=args.window_ms,
        grace_ms=args.grace_ms,
    )
    print(f"processed {args.events:,} events in {seconds:.1f} s after the query started", file=sys.stderr)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
