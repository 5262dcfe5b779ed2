"""Benchmark of committed-state queries (:mod:`deltastreams.streams.query`) on a store of 1M keys.

A count store's changelog (1M keys over 4 partitions) and its sub-topology's transaction log are
written through the commit protocol's own pieces (a decided batch naming the changelog files, then
their publication under its ``txn`` tag), without Spark. Then, measured:

- the first call: locating the store, reading its committed batch, loading the snapshot;
- point lookups: p50/p99/max over 10k random keys (each one also checks for a newer batch);
- an incremental refresh: a second batch updating 1,000 keys is committed, and the next lookup
  reads only its files.

    python -m deltastreams.devtools.bench.query [--keys 1000000] [--lookups 10000] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import tempfile
import time

import pyarrow as pa

from deltastreams.sinks import create_topic
from deltastreams.sinks.transaction import DecidedBatch, TablePublication, TransactionLog
from deltastreams.streams.query import StoreQuery
from deltastreams.topology.upgrade import TopologyRecord

APP = "bench-query"
STORE = "counts"
_COUNT = struct.Struct(">qq")


def _commit_batch(log: TransactionLog, changelog, seq: int, keys: list[str], counts: list[int]) -> None:
    """One decided and published batch of changelog entries (the protocol's steps 3 and 4)."""
    records = pa.table(
        {
            "key": pa.array([k.encode() for k in keys], pa.binary()),
            "value": pa.array([_COUNT.pack(c, 1_700_000_000_000 + seq) for c in counts], pa.binary()),
            "timestamp": pa.array([1_700_000_000_000 + seq] * len(keys), pa.int64()),
        }
    )
    files = changelog.prepare_files(records, changelog.end_offsets())
    log.decide(DecidedBatch(seq, log.epoch, {"bench-input": (seq - 1, seq)}, {changelog.name: TablePublication(changelog.uri, tuple(files))}))
    changelog.commit(files, txn=(log.txn_app_id, seq))


def setup(root: str, keys: int):
    create_topic(root, "bench-input", partitions=4, key_type=pa.string(), value_type=pa.int64())
    changelog = create_topic(root, f"{APP}-{STORE}-changelog", partitions=4, key_type=pa.binary(), value_type=pa.binary())
    log = TransactionLog(f"{root}/transactions/{APP}/subtopology-0", f"{APP}/subtopology-0")
    log.register("bench")
    record = TopologyRecord(0, ("bench-input",), (STORE,), (), (0,), "")
    log.keep_with_next_decision({"deltastreams.topology": record.to_json()})
    names = [f"user-{i:07d}" for i in range(keys)]
    _commit_batch(log, changelog, 0, names, [i % 1000 + 1 for i in range(keys)])
    return names, log, changelog


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def run(root: str, keys: int, lookups: int) -> dict:
    started = time.perf_counter()
    names, log, changelog = setup(root, keys)
    setup_s = time.perf_counter() - started

    started, cpu = time.perf_counter(), time.process_time()
    query = StoreQuery(root, APP, STORE)
    first = query.get(names[0])
    first_call_s, first_call_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    assert first == 1, first

    rng = random.Random(0)
    sample = [rng.choice(names) for _ in range(lookups)]
    latencies = []
    for name in sample:
        t = time.perf_counter()
        value = query.get(name)
        latencies.append(time.perf_counter() - t)
        assert value is not None
    latencies.sort()

    updated = rng.sample(names, 1000)
    _commit_batch(log, changelog, 1, updated, [10**6] * len(updated))
    t, cpu = time.perf_counter(), time.process_time()
    value = query.get(updated[0])
    refresh_s, refresh_cpu_s = time.perf_counter() - t, time.process_time() - cpu
    assert value == 10**6 and query.batch == 1, (value, query.batch)
    assert all(query.get(n) == 10**6 for n in updated)
    return {
        "keys": keys,
        "setup_s": round(setup_s, 2),
        "first_call_s": round(first_call_s, 3),
        "first_call_cpu_s": round(first_call_cpu_s, 3),  # this process's CPU: the wall time includes waiting on a loaded machine
        "lookups": lookups,
        "lookup_p50_ms": round(percentile(latencies, 0.50) * 1000, 4),
        "lookup_p99_ms": round(percentile(latencies, 0.99) * 1000, 4),
        "lookup_max_ms": round(latencies[-1] * 1000, 4),
        "refresh_after_1000_updates_s": round(refresh_s, 4),
        "refresh_cpu_s": round(refresh_cpu_s, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.query", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=10_000)
    parser.add_argument("--root", help="where to write the store (default: a temporary directory, deleted after)")
    args = parser.parse_args(argv)
    if args.root:
        print(json.dumps(run(args.root, args.keys, args.lookups), indent=2))
    else:
        with tempfile.TemporaryDirectory(prefix="bench-query-") as root:
            print(json.dumps(run(root, args.keys, args.lookups), indent=2))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
