"""Compact an application's changelog topics (keep the last record per key), while it is stopped.

    python -m jobs.compact --root DIR --application-id pageview
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sinks.compaction import compact_topic


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--application-id", required=True)
    args = parser.parse_args(argv)
    topics = sorted(p.name for p in (Path(args.root) / "topics").glob(f"{args.application_id}-*-changelog"))
    if not topics:
        print(f"no changelog topics of '{args.application_id}' under {args.root}/topics", file=sys.stderr)
        return 1
    for name in topics:
        result = compact_topic(args.root, name)
        print(f"{name}: {result.records_before:,} -> {result.records_after:,} records, {result.files_before} -> {result.files_after} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
