"""Deduplication with the Processor API: an event whose id was forwarded less than a time-to-live
ago is a duplicate (a producer's retry, say) and is dropped; a punctuator purges ids older than
the time-to-live, so the store does not grow without bound.

``events`` (keyed by event id, so an id's copies share a partition) -> process(Dedup, "seen-ids")
-> ``unique-events``.

    python -m jobs.dedup generate --root /tmp/dd --rounds 5
    python -m jobs.dedup run --root /tmp/dd --until-caught-up --max-records-per-batch 1
    python -m jobs.dedup results --root /tmp/dd [--reference]

``generate`` appends rounds of 10 s of event time in 2-second slices (one Delta version per
slice, so ``--max-records-per-batch 1`` takes one slice per batch): events, and copies of about a
third of them sent again 0-8 s later (the time-to-live is 5 s, so some copies come after it and
pass). Within a partition timestamps only grow, so :func:`reference_events` can compute the
result independently: an id's records in time order, each kept unless one kept less than 5 s
before it.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np
import pyarrow as pa

from jobs.example_cli import add_run_command, print_pairs, read_pairs, run_example
from jobs.example_cli import rounds_done as example_rounds_done
from streams import StreamsBuilder, Topology
from streams.errors import DeltaStreamsError
from streams.processor import Processor, PunctuationType, Stores

INPUT_TOPIC = "events"
OUTPUT_TOPIC = "unique-events"
APPLICATION_ID = "dedup"
STORE = "seen-ids"
TTL_MS, ROUND_MS, SLICE_MS = 5_000, 10_000, 2_000
START_MS = 1_700_000_000_000


class Dedup(Processor):
    """Kafka's classic deduplication transformer, as a Processor."""

    def init(self, context):
        self.context = context
        self.seen = context.get_state_store(STORE)
        context.schedule(TTL_MS, PunctuationType.STREAM_TIME, self.purge)

    def process(self, record):
        seen_at = self.seen.get(record.key)
        if seen_at is None or record.timestamp - seen_at >= TTL_MS:
            self.seen.put(record.key, record.timestamp)
            self.context.forward(record)

    def purge(self, stream_time):
        for event_id, seen_at in list(self.seen.all()):
            if seen_at <= stream_time - TTL_MS:
                self.seen.delete(event_id)


def build_topology() -> Topology:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store(STORE)))
    events = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=pa.string())
    events.process(Dedup, STORE, name="dedup").to(OUTPUT_TOPIC, key_column="event_id", value_column="payload")
    return builder.build()


def _topic(root: str, partitions: int):
    from sinks import Topic, create_topic

    if Topic.exists(root, INPUT_TOPIC):
        return Topic.open(root, INPUT_TOPIC)
    return create_topic(root, INPUT_TOPIC, partitions=partitions, key_type=pa.string(), value_type=pa.string(), key_column="event_id")


def rounds_done(root: str) -> int:
    return example_rounds_done(root, INPUT_TOPIC, START_MS, ROUND_MS)


def generate(root: str, *, rounds: int, per_round: int = 1000, seed: int = 0, partitions: int = 2) -> None:
    topic = _topic(root, partitions)
    done = rounds_done(root)
    for r in range(done, done + rounds):
        rng = np.random.default_rng([seed, r])
        start = START_MS + r * ROUND_MS
        ids = [f"e{r}.{i}" for i in range(per_round)]
        stamps = start + rng.integers(0, ROUND_MS, per_round)
        copies = rng.random(per_round) < 0.35
        copy_ids = [ids[i] for i in np.flatnonzero(copies)]
        copy_stamps = np.minimum(stamps[copies] + rng.integers(0, 8_001, len(copy_ids)), start + ROUND_MS - 1)
        all_ids = np.array(ids + copy_ids)
        all_stamps = np.concatenate([stamps, copy_stamps])
        payloads = np.array([f"p{r}.{i}" for i in range(len(all_ids))])
        for s in range(start, start + ROUND_MS, SLICE_MS):
            chosen = np.flatnonzero((all_stamps >= s) & (all_stamps < s + SLICE_MS))
            chosen = chosen[np.argsort(all_stamps[chosen], kind="stable")]
            topic.append(pa.table({"key": pa.array(all_ids[chosen]), "value": pa.array(payloads[chosen]), "timestamp": pa.array(all_stamps[chosen], pa.int64())}))


def reference_events(root: str) -> Counter:
    """``(event id, payload)`` of the events that must come out, computed from the input topic."""
    from sinks import Topic

    table = Topic.open(root, INPUT_TOPIC).read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    last_kept: dict[str, int] = {}
    out: Counter = Counter()
    for key, value, ts in zip(table["key"].to_pylist(), table["value"].to_pylist(), table["timestamp"].to_pylist(), strict=True):
        if key not in last_kept or ts - last_kept[key] >= TTL_MS:
            last_kept[key] = ts
            out[(key, value)] += 1
    return out


def read_results(root: str) -> Counter:
    return read_pairs(root, OUTPUT_TOPIC)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.dedup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("describe", help="print the topology description")
    gen = commands.add_parser("generate", help="append rounds of events with duplicates")
    gen.add_argument("--root", required=True)
    gen.add_argument("--rounds", type=int, default=5)
    gen.add_argument("--per-round", type=int, default=1000)
    gen.add_argument("--seed", type=int, default=0)
    add_run_command(commands)
    results = commands.add_parser("results", help="print the unique events, sorted")
    results.add_argument("--root", required=True)
    results.add_argument("--reference", action="store_true", help="the independent computation instead of the job's output")
    args = parser.parse_args(argv)
    try:
        if args.command == "describe":
            print(build_topology().describe(), end="")
        elif args.command == "generate":
            generate(args.root, rounds=args.rounds, per_round=args.per_round, seed=args.seed)
            print(f"appended {args.rounds} rounds under {args.root}", file=sys.stderr)
        elif args.command == "run":
            return run_example(args, APPLICATION_ID, build_topology)
        else:
            print_pairs(reference_events(args.root) if args.reference else read_results(args.root))
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
