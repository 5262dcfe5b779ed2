"""Deduplication with the Processor API: an event whose id was forwarded less than a time-to-live
ago is a duplicate (a producer's retry, say) and is dropped; a punctuator purges ids older than
the time-to-live, so the store does not grow without bound.

``events`` (keyed by event id, so an id's copies share a partition) -> process(Dedup, "seen-ids")
-> ``unique-events``. With ``--vectorised``, the same semantics as a batch processor
(``process_batches(BatchDedup, "seen-ids-typed")``): pyarrow/numpy over each batch, the store read
and written an array at a time. The two variants keep their ids in different stores (a typed
store's format differs), so do not switch a root from one to the other.

    python -m deltastreams.jobs.dedup generate --root /tmp/dd --rounds 5
    python -m deltastreams.jobs.dedup run --root /tmp/dd --until-caught-up --max-records-per-batch 1 [--vectorised]
    python -m deltastreams.jobs.dedup results --root /tmp/dd [--reference]

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

from deltastreams.jobs.example_output import print_pairs, read_pairs
from deltastreams.jobs.example_output import rounds_done as example_rounds_done
from deltastreams.streams import StreamsApp, StreamsBuilder, Topology
from deltastreams.streams.processor import BatchProcessor, Processor, PunctuationType, Stores

INPUT_TOPIC = "events"
OUTPUT_TOPIC = "unique-events"
APPLICATION_ID = "dedup"
STORE = "seen-ids"
TYPED_STORE = "seen-ids-typed"
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


class BatchDedup(BatchProcessor):
    """:class:`Dedup` over whole batches: the same records kept, the same ids stored."""

    def init(self, context):
        self.seen = context.get_state_store(TYPED_STORE)
        context.schedule(TTL_MS, PunctuationType.STREAM_TIME, self.purge)

    def process_batch(self, batch):
        keep, kept_ids, kept_at = first_within_ttl(batch["key"], batch["timestamp"].to_numpy(), self.seen.get_many, TTL_MS)
        self.seen.put_many(kept_ids, kept_at)
        rows = np.flatnonzero(keep)
        return batch.select(["key", "value"]).take(rows).append_column("input_row", pa.array(rows))

    def purge(self, stream_time):
        self.seen.purge(stream_time - TTL_MS)  # through a time index: costs what it deletes


def first_within_ttl(keys: pa.ChunkedArray, stamps: np.ndarray, stored, ttl: int) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Which records :class:`Dedup` keeps (a mask), and each changed id's last kept time.

    A record is kept unless its id was kept less than ``ttl`` before it, which depends on the
    id's earlier records, so it is decided in rounds: round k decides every id's k-th record of
    the batch at once (ids have a few records per batch, so a few vectorised rounds)."""
    encoded = keys.combine_chunks().dictionary_encode()
    ids, codes = encoded.dictionary, encoded.indices.to_numpy()
    known = stored(ids)
    last = np.where(np.asarray(known.is_valid()), known.fill_null(0).to_numpy(zero_copy_only=False), np.iinfo(np.int64).min)
    present = np.asarray(known.is_valid()).copy()
    order = np.argsort(codes, kind="stable")  # by id, then batch order
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    rank = np.arange(len(order)) - np.repeat(starts, sizes)  # each record's place among its id's
    keep = np.zeros(len(codes), dtype=bool)
    changed = np.zeros(len(ids), dtype=bool)
    by_round = np.argsort(rank, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(rank))]
    for k in range(len(bounds) - 1):
        rows = order[by_round[bounds[k] : bounds[k + 1]]]  # at most one record per id
        ids_k = codes[rows]
        kept = ~present[ids_k] | (stamps[rows] - last[ids_k] >= ttl)
        keep[rows[kept]] = True
        last[ids_k[kept]] = stamps[rows[kept]]
        present[ids_k[kept]] = True
        changed[ids_k[kept]] = True
    return keep, ids.filter(pa.array(changed)), last[changed]


def build_topology(vectorised: bool = False) -> Topology:
    builder = StreamsBuilder()
    events = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=pa.string())
    if vectorised:
        builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store(TYPED_STORE), key_type=pa.string(), value_type=pa.int64()))
        unique = events.process_batches(BatchDedup, TYPED_STORE, name="dedup")
    else:
        builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store(STORE)))
        unique = events.process(Dedup, STORE, name="dedup")
    unique.to(OUTPUT_TOPIC, key_column="event_id", value_column="payload")
    return builder.build()


def _topic(root: str, partitions: int):
    from deltastreams.sinks import Topic, create_topic

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
    from deltastreams.sinks import Topic

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
    cli = StreamsApp.command_line(
        lambda options: build_topology(options.vectorised), {"application_id": APPLICATION_ID}, prog="python -m deltastreams.jobs.dedup", description=__doc__
    )
    cli.add_option("--vectorised", action="store_true", topology=True, help="the batch processor variant (BatchDedup)")

    def generate_command(options: argparse.Namespace) -> None:
        generate(cli.config(options).root, rounds=options.rounds, per_round=options.per_round, seed=options.seed)
        print(f"appended {options.rounds} rounds under {options.root}", file=sys.stderr)

    gen = cli.add_command("generate", "append rounds of events with duplicates", generate_command)
    gen.add_argument("--root", required=True)
    gen.add_argument("--rounds", type=int, default=5)
    gen.add_argument("--per-round", type=int, default=1000)
    gen.add_argument("--seed", type=int, default=0)

    def results_command(options: argparse.Namespace) -> None:
        root = cli.config(options, existing_root=True).root
        print_pairs(reference_events(root) if options.reference else read_results(root))

    results = cli.add_command("results", "print the unique events, sorted", results_command)
    results.add_argument("--root", required=True)
    results.add_argument("--reference", action="store_true", help="the independent computation instead of the job's output")
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
