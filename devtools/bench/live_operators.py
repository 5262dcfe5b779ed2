"""What keeping a task's operators across micro-batches saves, per task and batch: the processing
core alone (no Spark), CPU time, so a loaded machine does not blur a fraction of a millisecond.

    python -m deltastreams.devtools.bench.live_operators [--batches 200] [--records 200] [--init-ms 0]

For each topology (the dedup example's Processor API and BatchProcessor variants, a windowed
count) it runs the same batches twice over RocksDB stores, each batch committed (the stores
advance from its changelog entries): with the operators built (and the processor ``init``-ed and
closed) for every batch, as Spark tasks did before they lived in their task host, and with one set
kept across batches. ``--init-ms`` adds that much work to the dedup processor's ``init`` (a user
processor loading a model or opening a connection there), which a kept processor pays once.
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
from deltastreams.streams import StreamsBuilder, TimeWindows, Topology
from deltastreams.streams.core import TaskProcessor
from deltastreams.streams.processor import Stores


def _windowed_count() -> Topology:
    builder = StreamsBuilder()
    events = builder.stream(dedup.INPUT_TOPIC, key_type=pa.string(), value_type=pa.string())
    events.group_by_key().windowed_by(TimeWindows.of_size(5000).grace(5000)).count(name="counts").to_stream().to("counts")
    return builder.build()


def _slow_init_dedup(init_ms: float) -> Topology:
    class SlowInitDedup(dedup.Dedup):
        def init(self, context):
            busy_until = time.process_time() + init_ms / 1000
            while time.process_time() < busy_until:
                pass
            super().init(context)

    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store(dedup.STORE)))
    builder.stream(dedup.INPUT_TOPIC, key_type=pa.string(), value_type=pa.string()).process(SlowInitDedup, dedup.STORE, name="dedup").to(dedup.OUTPUT_TOPIC)
    return builder.build()


def _batches(count: int, records: int) -> list[dict[str, pa.Table]]:
    keys = pa.array([f"k{j % 50}" for j in range(records)])
    return [
        {
            dedup.INPUT_TOPIC: pa.table(
                {
                    "partition": pa.array(np.zeros(records, dtype=np.int32)),
                    "offset": pa.array(np.arange(i * records, (i + 1) * records)),
                    "timestamp": pa.array(dedup.START_MS + i * 1000 + np.arange(records), pa.int64()),
                    "key": keys,
                    "value": keys,
                }
            )
        }
        for i in range(count)
    ]


def cpu_ms_per_batch(topology: Topology, batches: list[dict[str, pa.Table]], *, kept: bool) -> float:
    sub = topology.subtopologies[0]
    work = tempfile.mkdtemp(prefix="bench-live-")
    stores = {name: ChangeLoggingStore(RocksDBKeyValueStore(name, f"{work}/{name}")) for name in sub.stores}
    live = TaskProcessor(topology, sub, 0, stores) if kept else None
    started = time.process_time()
    for records in batches:
        processor = live or TaskProcessor(topology, sub, 0, stores)
        processor.process(records)
        if not kept:
            processor.close()
        for store in stores.values():  # the commit: the store advances from its changelog
            entries = store.changelog()
            store.abort()
            store.restore(entries)
    spent = time.process_time() - started
    for store in stores.values():
        store.close()
    shutil.rmtree(work, ignore_errors=True)
    return spent / len(batches) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.bench.live_operators", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--records", type=int, default=200, help="records per batch")
    parser.add_argument("--init-ms", type=float, default=0.0, help="CPU work added to the dedup processor's init")
    parser.add_argument("--reps", type=int, default=3, help="best of this many runs")
    args = parser.parse_args(argv)
    if args.batches < 1 or args.records < 1 or args.reps < 1:
        parser.error("--batches, --records and --reps must be at least 1")
    batches = _batches(args.batches, args.records)
    topologies = [("dedup, Processor API", dedup.build_topology()), ("dedup, BatchProcessor", dedup.build_topology(vectorised=True)), ("windowed count", _windowed_count())]
    if args.init_ms > 0:
        topologies.append((f"dedup, init taking {args.init_ms:g} ms", _slow_init_dedup(args.init_ms)))
    print(f"{args.batches} batches of {args.records} records, CPU ms per task and batch (best of {args.reps})")
    for name, topology in topologies:
        before = min(cpu_ms_per_batch(topology, batches, kept=False) for _ in range(args.reps))
        after = min(cpu_ms_per_batch(topology, batches, kept=True) for _ in range(args.reps))
        print(f"{name}: built every batch {before:.2f} ms, kept across batches {after:.2f} ms, saved {before - after:.2f} ms ({(before - after) / before:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
