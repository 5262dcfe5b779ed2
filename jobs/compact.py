"""Compact an application's changelog topics once, while it is stopped.

    python -m deltastreams.jobs.compact --root DIR --application-id pageview [--tombstone-retention-ms MS]

A running application compacts its changelogs itself (``[retention]`` settings); this is the
same step (:func:`deltastreams.sinks.retention.compact_changelog`) for a stopped one, e.g. before copying its
data. Do not run it against a running application: its next commit to the changelog would find
a version it did not write and stop the job.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

from deltastreams.conf import RetentionConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.jobs.roots import require_root
from deltastreams.sinks import Topic
from deltastreams.sinks.retention import compact_changelog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--application-id", required=True)
    parser.add_argument(
        "--tombstone-retention-ms",
        type=int,
        default=int(RetentionConfig().tombstone_retention / timedelta(milliseconds=1)),
        help="drop tombstones this far behind their partition's stream time (default: retention.tombstone_retention_ms)",
    )
    args = parser.parse_args(argv)
    try:
        require_root(args.root)
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    topics = sorted(p.name for p in (Path(args.root) / "topics").glob(f"{args.application_id}-*-changelog"))
    if not topics:
        print(f"no changelog topics of '{args.application_id}' under {args.root}/topics", file=sys.stderr)
        return 1
    for name in topics:
        table = Topic.open(args.root, name).delta_table()
        result = compact_changelog(table, min_files=2, tombstone_retention=timedelta(milliseconds=args.tombstone_retention_ms))
        if result.conflict:
            print(f"{name}: changed while compacting (is the application running?); nothing done", file=sys.stderr)
            return 1
        print(
            f"{name}: {result.records_before:,} -> {result.records_after:,} records, "
            f"{result.files_removed} -> {result.files_added} files, clean watermarks {dict(result.watermarks)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
