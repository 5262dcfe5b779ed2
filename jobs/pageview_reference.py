"""An independent computation of the pageview job's final windowed counts, with pandas.

Semantics reproduced (none of the project's processing code is used; only its partitioner, whose
Kafka compatibility is tested on its own):
1. each source partition's events, in offset order, filtered (duration_s >= min) and re-keyed by
   category, go to repartition partition murmur2(category) % partitions;
2. each repartition partition interleaves its source partitions' sequences by always taking the
   sequence whose next record has the smallest timestamp (Kafka's PartitionGroup choice);
3. per repartition partition (task), stream time is the running maximum timestamp; a record
   counts for its window [start, start + size) unless start + size + grace <= stream time.
"""

from __future__ import annotations

import heapq

import pandas as pd

from sinks import open_table, partition_for


def final_counts(events: pd.DataFrame, *, window_ms: int, grace_ms: int, min_duration_s: int = 30, partitions: int = 3) -> pd.DataFrame:
    """``events``: source records with columns partition, offset, timestamp, category, duration_s.
    Returns category, window_start, window_end, count (windows with at least one counted record)."""
    kept = events[events["duration_s"] >= min_duration_s].sort_values(["partition", "offset"])
    target = {c: partition_for(c.encode(), partitions) for c in kept["category"].unique()}
    kept = kept.assign(target=kept["category"].map(target))
    counts: dict[tuple[str, int], int] = {}
    for _, task in kept.groupby("target"):
        sequences = [
            list(zip(seq["timestamp"].tolist(), [source] * len(seq), range(len(seq)), seq["category"].tolist()))
            for source, seq in task.groupby("partition")
        ]
        stream_time = -1
        for ts, _, _, category in heapq.merge(*sequences, key=lambda r: r[0]):
            stream_time = max(stream_time, ts)
            start = ts - ts % window_ms
            if start + window_ms + grace_ms > stream_time:
                counts[(category, start)] = counts.get((category, start), 0) + 1
    rows = [(c, s, s + window_ms, n) for (c, s), n in counts.items()]
    frame = pd.DataFrame(rows, columns=["category", "window_start", "window_end", "count"])
    return frame.sort_values(["window_start", "category"]).reset_index(drop=True)


def source_events(root: str) -> pd.DataFrame:
    """The generated input, read with plain deltalake (given the root's storage options; not the project's reader)."""
    table = open_table(f"{root}/topics/pageview-events").to_pyarrow_dataset().to_table(use_threads=False)
    return table.select(["partition", "offset", "timestamp", "category", "duration_s"]).to_pandas()
