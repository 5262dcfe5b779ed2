"""Speed of the processing core's windowed count, single process, no Spark.

    python -m deltastreams.devtools.bench.core [--records 1000000] [--batch 100000]

Runs the pageview's second sub-topology (windowed count by category) through the core on records
already in a repartition topic's shape, and compares, in the same run, against two baselines: a
pyarrow group-by of (category, window) (the practical limit: no order, no state, no revisions) and
a plain per-record Python loop of the same semantics (what the vectorisation saves).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.jobs.pageview_data import generate_events
from deltastreams.state import ChangeLoggingStore, InMemoryKeyValueStore, RocksDBKeyValueStore
from deltastreams.streams import StreamsBuilder, TimeWindows
from deltastreams.streams.core import TaskProcessor


def _topology():
    builder = StreamsBuilder()
    builder.stream("by-category").group_by_key().windowed_by(TimeWindows.of_size(5000).grace(10_000)).count(name="counts").to_stream().to("out")
    return builder.build()


def _records(n: int) -> pa.Table:
    events = generate_events(n, seed=1)
    category = pc.struct_field(events.column("value"), "category")
    return pa.table(
        {
            "partition": pa.array(np.zeros(n, dtype=np.int32)),
            "offset": pa.array(np.arange(n, dtype=np.int64)),
            "timestamp": events.column("timestamp"),
            "key": category,
            "value": events.column("value"),
        }
    )


def run_core(records: pa.Table, batch: int, *, caching: bool, backend: str) -> tuple[float, int]:
    topology = _topology()
    sub = topology.subtopologies[0]
    state_dir = tempfile.mkdtemp()
    inner = RocksDBKeyValueStore("counts", f"{state_dir}/counts") if backend == "rocksdb" else InMemoryKeyValueStore("counts")
    store = ChangeLoggingStore(inner)
    task = TaskProcessor(topology, sub, 0, {"counts": store}, caching=caching)
    emitted = 0
    started = time.perf_counter()
    for i in range(0, records.num_rows, batch):
        result = task.process({"by-category": records.slice(i, batch)})
        emitted += result.outputs["out"].num_rows
        # The commit, as in production: the store advances only from the committed changelog.
        store.abort()
        store.restore(result.changelogs["counts"])
    elapsed = time.perf_counter() - started
    store.close()
    shutil.rmtree(state_dir, ignore_errors=True)
    return elapsed, emitted


def run_pyarrow(records: pa.Table) -> float:
    started = time.perf_counter()
    window = pc.multiply(pc.divide(records.column("timestamp"), 5000), 5000)
    pa.table({"key": records.column("key"), "window": window}).group_by(["key", "window"]).aggregate([("key", "count")])
    return time.perf_counter() - started


def run_python_loop(records: pa.Table) -> float:
    keys = records.column("key").to_pylist()
    stamps = records.column("timestamp").to_pylist()
    started = time.perf_counter()
    counts: dict = {}
    stream_time = -1
    for key, ts in zip(keys, stamps, strict=True):
        stream_time = max(stream_time, ts)
        start = ts - ts % 5000
        if start + 5000 + 10_000 > stream_time:
            counts[(key, start)] = counts.get((key, start), 0) + 1
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=100_000)
    args = parser.parse_args(argv)
    records = _records(args.records)
    n = records.num_rows
    print(f"windowed count, {n:,} records, batches of {args.batch:,}")
    arrow = run_pyarrow(records)
    loop = run_python_loop(records)
    print(f"  {'pyarrow group-by (no order, no state)':44s} {n / arrow:>12,.0f} rec/s")
    print(f"  {'python loop, same semantics, no store':44s} {n / loop:>12,.0f} rec/s")
    for backend in ("memory", "rocksdb"):
        for caching in (True, False):
            elapsed, emitted = run_core(records, args.batch, caching=caching, backend=backend)
            label = f"core, {backend} store, caching {'on' if caching else 'off'}"
            print(f"  {label:44s} {n / elapsed:>12,.0f} rec/s  ({emitted:,} revisions; {loop / elapsed:.1f}x the loop, {arrow / elapsed:.2f}x pyarrow)")


if __name__ == "__main__":
    main()
