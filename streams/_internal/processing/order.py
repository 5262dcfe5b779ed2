"""The order in which a task takes records from several inputs: Kafka's PartitionGroup.

Kafka Streams always takes the next record from the input partition whose head record has the
smallest timestamp (ties: the partition listed first); within a partition, offset order. That is
the same order as a stable sort of all records by their partition's running maximum timestamp,
which is how it is computed here, vectorised. The repartition merge uses it to interleave the
writers of one partition, and a task uses it to interleave its source topics (a join's stream
and table), so results do not depend on how input was cut into batches.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def merge_order(timestamps: Sequence[np.ndarray]) -> np.ndarray:
    """Positions (into the concatenation of the inputs' records) in merged order."""
    # Each input's running maximum never decreases, and a stable sort keeps equal keys in
    # concatenation order (by input, then position): the k-way merge, ties to the lower input.
    keys = np.concatenate([np.maximum.accumulate(t) if len(t) else t for t in timestamps])
    return np.argsort(keys, kind="stable")


def sequence_numbers(timestamps: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per input, each record's place in the merged order (its ``_seq``)."""
    sizes = [len(t) for t in timestamps]
    if len(sizes) <= 1:
        return [np.arange(n, dtype=np.int64) for n in sizes]
    seqs = np.empty(sum(sizes), dtype=np.int64)
    seqs[merge_order(timestamps)] = np.arange(len(seqs), dtype=np.int64)
    return np.split(seqs, np.cumsum(sizes)[:-1])
