"""The paper's running example: pageviews per category in 5-second windows.

``pageview-events`` (keyed by user_id) -> filter(duration_s >= 30) -> map to key = category ->
group_by_key -> windowed_by(5 s tumbling, grace) -> count -> to_stream -> ``pageview-windowed-counts``.

    python -m jobs.pageview describe
    python -m jobs.pageview demo --events 20000
"""

from __future__ import annotations

import argparse
import sys

from streams import StreamsBuilder, Suppressed, TimeWindows, Topology

INPUT_TOPIC = "pageview-events"
OUTPUT_TOPIC = "pageview-windowed-counts"


def build_topology(
    *, window_ms: int = 5000, grace_ms: int = 10_000, min_duration_s: int = 30, emit: str = "revisions"
) -> Topology:
    """The pageview topology with Python callables (runs anywhere, the test driver included)."""
    builder = StreamsBuilder()
    counts = (
        builder.stream(INPUT_TOPIC)
        .filter(lambda user_id, view: view["duration_s"] >= min_duration_s)
        .map(lambda user_id, view: (view["category"], view))
        .group_by_key()
        .windowed_by(TimeWindows.of_size(window_ms).grace(grace_ms))
        .count()
    )
    if emit == "final":
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to(OUTPUT_TOPIC, key_column="category", value_column="count")
    return builder.build()


def _demo(args: argparse.Namespace) -> None:
    from jobs.pageview_data import generate_events
    from streams import TopologyTestDriver

    events = generate_events(args.events, seed=args.seed)
    topology = build_topology(window_ms=args.window_ms, grace_ms=args.grace_ms, emit=args.emit)
    with TopologyTestDriver(topology) as driver:
        rows = list(zip(events.column("key").to_pylist(), events.column("value").to_pylist(), events.column("timestamp").to_pylist(), strict=True))
        for i in range(0, len(rows), 1000):
            driver.pipe_batch(INPUT_TOPIC, rows[i : i + 1000])
        latest = {}
        for record in driver.read_output(OUTPUT_TOPIC):
            latest[(record.key, record.window_start, record.window_end)] = record.value
        print("category,window_start,window_end,count")
        for (category, start, end), count in sorted(latest.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            print(f"{category},{start},{end},{count}")
        print(f"# {len(rows)} events, {len(latest)} windows, {driver.dropped_records} late records dropped", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jobs.pageview", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    describe = commands.add_parser("describe", help="print the topology description")
    demo = commands.add_parser("demo", help="run on synthetic events through the TopologyTestDriver")
    for sub in (describe, demo):
        sub.add_argument("--window-ms", type=int, default=5000)
        sub.add_argument("--grace-ms", type=int, default=10_000)
        sub.add_argument("--emit", choices=("revisions", "final"), default="revisions")
    demo.add_argument("--events", type=int, default=20_000)
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "describe":
        print(build_topology(window_ms=args.window_ms, grace_ms=args.grace_ms, emit=args.emit).describe(), end="")
    else:
        _demo(args)


if __name__ == "__main__":
    main()
