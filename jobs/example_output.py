"""What the example jobs' ``results`` and ``generate`` share: reading an output topic's records as
``(key, value)`` pairs and printing them, printing a table as CSV, and counting the rounds of input
already generated (so a second ``generate`` continues where the first stopped)."""

from __future__ import annotations

import csv
import sys
from collections import Counter

import pyarrow as pa


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


def print_table(table: pa.Table) -> None:
    """``table`` as CSV with a header, on stdout."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
        writer.writerow(row)


def rounds_done(root: str, topic: str, start_ms: int, round_ms: int) -> int:
    """Rounds already appended to ``topic``, each ``round_ms`` of event time from ``start_ms``."""
    from deltastreams.sinks import Topic

    if not Topic.exists(root, topic):
        return 0
    stamps = Topic.open(root, topic).read().column("timestamp").to_pylist()
    return 0 if not stamps else int((max(stamps) - start_ms) // round_ms) + 1
