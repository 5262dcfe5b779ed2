"""Speed of the vectorised Processor API: the dedup example's record-at-a-time processor against
its batch processor, in one process, no Spark, with RocksDB stores and a commit per batch.

    python -m deltastreams.devtools.bench.batch_processor [--records 500000] [--batch 50000] [--reps 3]

Both run through the processing core (:class:`deltastreams.streams.core.TaskProcessor`) on the same records
(event ids, a third of them sent again 0-8 s later, timestamps growing, as
:func:`deltastreams.jobs.dedup.generate` makes them), committing each batch as production does (the stores
advance only from the committed changelog). The baseline is the same decision in numpy over the
whole input at once, without stores, batches or purges: the practical limit. Prints records/s of
each (best of ``--reps``) and the ratios; checks the two processors emitted the same records.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

from deltastreams.jobs import dedup
from deltastreams.state import ChangeLoggingStore, RocksDBKeyValueStore
from deltastreams.streams.core import TaskProcessor


def records(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    originals = int(n / 1.35)
    stamps = dedup.START_MS + np.sort(rng.integers(0, originals * 10, originals))  # ~100 events per second
    copies = rng.choice(originals, n - originals)
    ids = np.concatenate([np.arange(originals), copies])
    all_stamps = np.concatenate([stamps, stamps[copies] + rng.integers(0, 8_001, len(copies))])
    order = np.argsort(all_stamps, kind="stable")
    return pa.table(
        {
            "partition": pa.array(np.zeros(n, dtype=np.int32)),
            "offset": pa.array(np.arange(n, dtype=np.int64)),
            "timestamp": pa.array(all_stamps[order]),
            "key": pa.array(np.char.add("e", ids[order].astype(str))),
            "value": pa.array(np.char.add("p", order.astype(str))),
        }
    )


def run_core(table: pa.Table, batch: int, *, vectorised: bool) -> tuple[float, pa.Table]:
    topology = dedup.build_topology(vectorised)
    sub = topology.subtopologies[0]
    state_dir = tempfile.mkdtemp(prefix="bench-batch-processor-")
    stores = {name: ChangeLoggingStore(RocksDBKeyValueStore(name, f"{state_dir}/{name}")) for name in sub.stores}
    emitted = []
    started = time.perf_counter()
    for i in range(0, table.num_rows, batch):
        # On Spark a task's operators live for one micro-batch: so here.
        task = TaskProcessor(topology, sub, 0, stores, caching=False)
        result = task.process({dedup.INPUT_TOPIC: table.slice(i, batch)})
        task.close()
        emitted.append(result.outputs[dedup.OUTPUT_TOPIC])
        for name, store in stores.items():  # the commit: stores advance only from the changelog
            store.abort()
            store.restore(result.changelogs[name])
    elapsed = time.perf_counter() - started
    for store in stores.values():
        store.close()
    shutil.rmtree(state_dir, ignore_errors=True)
    return elapsed, pa.concat_tables(emitted)


def run_numpy(table: pa.Table) -> tuple[float, int]:
    started = time.perf_counter()
    keep, _, _ = dedup.first_within_ttl(table.column("key"), table.column("timestamp").to_numpy(), lambda ids: pa.nulls(len(ids), pa.int64()), dedup.TTL_MS)
    kept = table.filter(pa.array(keep))
    return time.perf_counter() - started, kept.num_rows


def _without_empty_headers(table: pa.Table) -> pa.Table:
    """The records without a headers column that only says "none" (record-at-a-time processors
    forward empty headers; batch processors forward none)."""
    if "headers" in table.column_names and not any(table.column("headers").to_pylist()):
        return table.drop_columns(["headers"])
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.batch_processor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    table = records(args.records)
    best: dict[str, float] = {}
    outputs: dict[str, pa.Table] = {}
    for _ in range(args.reps):  # interleaved, so a busy machine slows all three alike
        for name, vectorised in (("per-record", False), ("vectorised", True)):
            elapsed, outputs[name] = run_core(table, args.batch, vectorised=vectorised)
            best[name] = min(best.get(name, elapsed), elapsed)
        elapsed, kept = run_numpy(table)
        best["numpy baseline"] = min(best.get("numpy baseline", elapsed), elapsed)
    if not _without_empty_headers(outputs["per-record"]).equals(_without_empty_headers(outputs["vectorised"])):
        print("error: the two processors emitted different records")
        return 1
    print(f"{args.records:,} records in batches of {args.batch:,}; {outputs['vectorised'].num_rows:,} unique (numpy: {kept:,}); best of {args.reps}")
    rates = {name: args.records / seconds for name, seconds in best.items()}
    for name, rate in rates.items():
        print(f"  {name:15s} {rate:>12,.0f} records/s  ({best[name]:.3f} s)")
    print(f"  vectorised / per-record: {rates['vectorised'] / rates['per-record']:.1f}x; "
          f"numpy baseline / vectorised: {rates['numpy baseline'] / rates['vectorised']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
