"""Speed of the processing core's stream-stream join, single process, no Spark.

    python -m deltastreams.devtools.bench.stream_join [--records 400000] [--batch 50000] [--keys 20000]

Two streams (half the records each, keys drawn from ``--keys``, timestamps rising with some
disorder) joined within 1 s (grace 0.5 s), inner and left, through the core with RocksDB stores,
committing every batch as production does. Baselines in the same run: a pandas merge of the two
streams on key filtered by time difference (the order-free limit: no state, no late data, no
emission timing), and a plain Python loop with per-key lists and the same window semantics but
no stores (what Kafka's record-at-a-time algorithm costs in Python by itself).
"""

from __future__ import annotations

import argparse
import bisect
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

from deltastreams.state import ChangeLoggingStore, RocksDBKeyValueStore
from deltastreams.streams import JoinWindows, StreamsBuilder
from deltastreams.streams.core import TaskProcessor

DIFFERENCE_MS, GRACE_MS = 1000, 500


def _records(n: int, keys: int, seed: int = 1) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    out = {}
    for side in ("left", "right"):
        m = n // 2
        stamps = np.arange(m, dtype=np.int64) * 2 + rng.integers(-200, 1, m)  # ~2 ms apart, up to 200 ms late
        out[side] = pa.table(
            {
                "partition": pa.array(np.zeros(m, dtype=np.int32)),
                "offset": pa.array(np.arange(m, dtype=np.int64)),
                "timestamp": pa.array(np.maximum(stamps, 0)),
                "key": pa.array([f"k{k}" for k in rng.integers(0, keys, m)]),
                "value": pa.array([f"{side[0]}{i}" for i in range(m)]),
            }
        )
    return out


def run_core(records: dict[str, pa.Table], batch: int, kind: str) -> tuple[float, int]:
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(DIFFERENCE_MS, GRACE_MS)
    getattr(builder.stream("left"), kind)(builder.stream("right"), lambda a, b: f"{a}|{b}", windows, store_name="j").to("out")
    topology = builder.build()
    sub = topology.subtopologies[0]
    state_dir = tempfile.mkdtemp()
    stores = {name: ChangeLoggingStore(RocksDBKeyValueStore(name, f"{state_dir}/{name}")) for name in sub.stores}
    task = TaskProcessor(topology, sub, 0, stores, caching=False)
    emitted, started = 0, time.perf_counter()
    for i in range(0, records["left"].num_rows, batch):
        result = task.process({side: table.slice(i, batch) for side, table in records.items()})
        emitted += result.outputs["out"].num_rows if "out" in result.outputs else 0
        for name, store in stores.items():  # the commit: stores advance from their changelogs
            store.abort()
            store.restore(result.changelogs[name])
    elapsed = time.perf_counter() - started
    for store in stores.values():
        store.close()
    shutil.rmtree(state_dir, ignore_errors=True)
    return elapsed, emitted


def run_pandas(records: dict[str, pa.Table]) -> tuple[float, int]:
    left, right = (records[s].select(["timestamp", "key", "value"]).to_pandas() for s in ("left", "right"))
    started = time.perf_counter()
    pairs = left.merge(right, on="key")
    pairs = pairs[(pairs["timestamp_x"] - pairs["timestamp_y"]).abs() <= DIFFERENCE_MS]
    return time.perf_counter() - started, len(pairs)


def run_python_loop(records: dict[str, pa.Table]) -> tuple[float, int]:
    rows = []
    for side in ("left", "right"):
        t = records[side]
        rows += zip(t["timestamp"].to_pylist(), [side] * t.num_rows, t["key"].to_pylist(), t["value"].to_pylist(), strict=True)
    rows.sort(key=lambda r: r[0])  # roughly the task's order
    started = time.perf_counter()
    windows: dict[tuple[str, str], list[tuple[int, str]]] = {}
    emitted = 0
    for ts, side, key, value in rows:
        bisect.insort(windows.setdefault((side, key), []), (ts, value))
        other = windows.get(("right" if side == "left" else "left", key), [])
        lo = bisect.bisect_left(other, (ts - DIFFERENCE_MS, ""))
        hi = bisect.bisect_right(other, (ts + DIFFERENCE_MS, "\uffff"))
        emitted += hi - lo
    return time.perf_counter() - started, emitted


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--batch", type=int, default=50_000, help="records per side per batch")
    parser.add_argument("--keys", type=int, default=20_000)
    args = parser.parse_args(argv)
    records = _records(args.records, args.keys)
    n = sum(t.num_rows for t in records.values())
    print(f"stream-stream join within {DIFFERENCE_MS} ms, {n:,} records, {args.keys:,} keys, batches of {args.batch:,} per side")
    pandas_s, pandas_pairs = run_pandas(records)
    loop_s, loop_pairs = run_python_loop(records)
    print(f"  {'pandas merge + filter (no order, no state)':44s} {n / pandas_s:>12,.0f} rec/s  ({pandas_pairs:,} pairs)")
    print(f"  {'python loop, per-key lists, no stores':44s} {n / loop_s:>12,.0f} rec/s  ({loop_pairs:,} pairs)")
    for kind in ("join", "left_join"):
        elapsed, emitted = run_core(records, args.batch, kind)
        print(f"  {'core ' + kind + ', rocksdb stores':44s} {n / elapsed:>12,.0f} rec/s  ({emitted:,} results; {loop_s / elapsed:.2f}x the loop, {pandas_s / elapsed:.3f}x pandas)")


if __name__ == "__main__":
    main()
