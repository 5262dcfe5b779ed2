"""The record collector: where each output record goes. The processing core only says which
topic a record is for; partitioning (Kafka's default partitioner) is decided here, once, for the
Spark runtime and the test driver alike."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sinks.partitioner import partitions_for


def with_partitions(records: pa.Table, partitions: int, task_partition: int) -> pa.Table:
    """``records`` (the core's output for one topic) with a leading ``partition`` column.

    Keys go where Kafka's default partitioner puts them. Kafka spreads null-keyed records over
    partitions; keeping them in the writing task's partition (mod ``partitions``) is one
    deterministic such choice, stable across replays."""
    if "key" in records.column_names:
        chosen = partitions_for(records.column("key"), partitions)
        chosen[chosen < 0] = task_partition % partitions
    else:
        chosen = np.full(records.num_rows, task_partition % partitions, dtype=np.int32)
    return records.add_column(0, "partition", pa.array(chosen, pa.int32()))
