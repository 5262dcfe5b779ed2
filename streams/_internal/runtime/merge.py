"""Merge the staged files several upstream tasks wrote for one repartition partition.

Each staged file is one writer's records for the partition, in the order that writer produced
them. The merge always takes the writer whose next record has the smallest timestamp (ties: the
lower writer), which is how Kafka Streams picks among a task's input partitions (its
PartitionGroup, :mod:`deltastreams.streams._internal.processing.order`). Interleaving writers by arrival, or
one writer after the other, would make stream time downstream jump ahead by a whole batch and
drop records as late depending on how the input was cut into batches; the merge keeps results
independent of that.

The merged records get dense offsets from where the partition ends and are written as the
partition's Parquet file, which the upstream sub-topology's commit publishes; the downstream task
processes the same records from memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from deltastreams.sinks import DataFile, Topic, read_staged_file
from deltastreams.streams._internal.processing.order import merge_order
from deltastreams.streams._internal.runtime.plan import TopicTarget, WrittenFile, schema_to_text


def merge_fresh(target: TopicTarget, partition: int, staged: Sequence[tuple[int, DataFile]]) -> tuple[pa.Table, WrittenFile]:
    """Merge ``(writer, staged file)`` pairs of one partition; returns the merged records in
    record form (with ``partition`` and ``offset``) and the Parquet file written for them."""
    tables = [read_staged_file(target.uri, f.path) for _, f in sorted(staged, key=lambda item: item[0])]
    merged = pa.concat_tables(tables, promote_options="permissive")
    stamps = [t.column("timestamp").to_numpy() for t in tables]
    merged = merged.take(pa.array(merge_order(stamps)))
    first = target.next_offsets[partition]
    merged = merged.add_column(0, "offset", pa.array(np.arange(first, first + merged.num_rows, dtype=np.int64)))
    merged = merged.add_column(0, "partition", pa.array(np.full(merged.num_rows, partition, dtype=np.int32)))
    layout = target.layout_for(merged.schema)
    records = layout.conform(merged, target.physical)
    (written,) = Topic(target.physical, target.uri, layout).prepare_files(records, {partition: first}, transient=True)
    new = target.layout is None
    return records, WrittenFile(
        target.logical,
        partition,
        written,
        schema_to_text(layout.table_schema()) if new else None,
        layout.to_json() if new else None,
    )
