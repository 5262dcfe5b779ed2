"""An independent computation of the pageview job's final windowed counts, with pandas.

Semantics reproduced (none of the project's processing code is used; only its partitioner, whose
Kafka compatibility is tested on its own):
1. each source partition's events, in offset order, filtered (duration_s >= min) and re-keyed by
   category, go to repartition partition murmur2(category) % partitions;
2. each repartition partition interleaves its source partitions' sequences by always taking the
   sequence whose next record has the smallest timestamp (Kafka's PartitionGroup choice);
3. per repartition partition (task), stream time is the running maximum timestamp; a record
   counts for its window [start, start + size) unless start + size + grace <= stream time.

Two peers of the benchmark (``deltastreams.devtools.bench.peers.run``) apply the same rule in an order or at a
granularity of their own, and get an expectation of their own from the same input:
- Kafka Streams on a live broker: the order of step 2 is whatever order the upstream tasks'
  writes reached each repartition partition. :func:`kafka_streams_counts` checks that order
  against the input (every filtered record there once, each source partition's records in their
  order) and applies step 3 to it.
- Spark Structured Streaming: a global watermark instead of per-task stream time, advanced between
  micro-batches. :func:`spark_counts` applies Spark's rule to the events' micro-batches.
"""

from __future__ import annotations

import heapq

import numpy as np
import pandas as pd

from deltastreams.sinks import open_table, partition_for


def final_counts(events: pd.DataFrame, *, window_ms: int, grace_ms: int, min_duration_s: int = 30, partitions: int = 3) -> pd.DataFrame:
    """``events``: source records with columns partition, offset, timestamp, category, duration_s.
    Returns category, window_start, window_end, count (windows with at least one counted record)."""
    kept = events[events["duration_s"] >= min_duration_s].sort_values(["partition", "offset"])
    target = {c: partition_for(c.encode(), partitions) for c in kept["category"].unique()}
    kept = kept.assign(target=kept["category"].map(target))
    ordered = []
    for task_id, task in kept.groupby("target"):
        sequences = [
            list(zip(seq["timestamp"].tolist(), [source] * len(seq), range(len(seq)), seq["category"].tolist()))
            for source, seq in task.groupby("partition")
        ]
        merged = list(heapq.merge(*sequences, key=lambda r: r[0]))
        ordered.append(pd.DataFrame({"task": task_id, "timestamp": [r[0] for r in merged], "category": [r[3] for r in merged]}))
    return counts_in_task_order(pd.concat(ordered, ignore_index=True) if ordered else kept.assign(task=0), window_ms=window_ms, grace_ms=grace_ms)


def counts_in_task_order(records: pd.DataFrame, *, window_ms: int, grace_ms: int) -> pd.DataFrame:
    """Step 3 over ``records`` (task, timestamp, category), each task's records in the order the
    task processes them."""
    records = records.reset_index(drop=True)
    stream_time = records.groupby("task", sort=False)["timestamp"].cummax()
    start = records["timestamp"] - records["timestamp"] % window_ms
    counted = records.assign(window_start=start)[start + window_ms + grace_ms > stream_time]
    return _windows(counted, window_ms)


def _windows(counted: pd.DataFrame, window_ms: int) -> pd.DataFrame:
    frame = counted.groupby(["category", "window_start"]).size().rename("count").reset_index()
    frame.insert(2, "window_end", frame["window_start"] + window_ms)
    frame["count"] = frame["count"].astype("int64")
    return frame.sort_values(["window_start", "category"]).reset_index(drop=True)


def kafka_streams_counts(
    events: pd.DataFrame, repartition: pd.DataFrame, *, window_ms: int, grace_ms: int, min_duration_s: int = 30, partitions: int = 3, source_partitions: int = 2
) -> tuple[pd.DataFrame, list[str]]:
    """Kafka Streams' final counts given the order its repartition topic holds, and what is wrong
    with that order (empty when it is a possible one).

    ``events``: the source records (partition, offset, timestamp, user_id, page_id, category,
    duration_s); ``repartition``: the repartition topic's records (partition, offset, timestamp,
    user_id, page_id, category, duration_s), as read back. A possible order holds every filtered
    event exactly once, in the partition its category hashes to, and each source partition's
    events in their source order (a source partition is known by its user_id key)."""
    fields = ["timestamp", "user_id", "page_id", "category", "duration_s"]
    problems = []
    kept = events[events["duration_s"] >= min_duration_s].sort_values(["partition", "offset"])
    seen = repartition.sort_values(["partition", "offset"])
    if len(seen) != len(kept):
        problems.append(f"the repartition topic holds {len(seen):,} records, the filtered input {len(kept):,}")
    categories = pd.concat([kept["category"], seen["category"]]).unique()
    target = {c: partition_for(c.encode(), partitions) for c in categories}
    misplaced = int((seen["category"].map(target) != seen["partition"]).sum())
    if misplaced:
        problems.append(f"{misplaced:,} repartition records are not in their category's partition")
    users = pd.concat([kept["user_id"], seen["user_id"]]).unique()
    source = {u: partition_for(u.encode(), source_partitions) for u in users}
    seen = seen.assign(source=seen["user_id"].map(source))
    kept = kept.assign(target=kept["category"].map(target))
    for (task, origin), expected in kept.groupby(["target", "partition"]):
        got = seen[(seen["partition"] == task) & (seen["source"] == origin)]
        if not np.array_equal(got[fields].to_numpy(), expected[fields].to_numpy()):
            problems.append(f"repartition partition {task} does not hold source partition {origin}'s filtered records in their order")
    counts = counts_in_task_order(seen.rename(columns={"partition": "task"}), window_ms=window_ms, grace_ms=grace_ms)
    return counts, problems


def spark_counts(events: pd.DataFrame, batch_ids: list[int], *, window_ms: int, grace_ms: int, min_duration_s: int = 30) -> tuple[pd.DataFrame, dict[int, int], int]:
    """Spark Structured Streaming's final counts for ``events`` (timestamp, category, duration_s,
    batch: the micro-batch that read it), given every micro-batch id the query ran (those without
    data too). Also the watermark (ms) of each batch and how many rows Spark drops as late.

    Spark's rule (measured on Spark 4.2, see the module docstring of ``deltastreams.devtools.bench.peers.spark_pageview``):
    the watermark of batch ``b`` is the largest event time of the rows of batches before ``b``
    minus the delay (the grace), never lower than the batch before's, 0 at first; a row of batch
    ``b`` is dropped as late when its window's end is at or before the watermark of batch ``b - 1``
    (Spark judges late rows by the previous batch's watermark and evicts by the current one)."""
    kept = events[events["duration_s"] >= min_duration_s]
    newest = kept.groupby("batch")["timestamp"].max().to_dict()
    watermarks, watermark, seen = {}, 0, None
    for b in sorted(batch_ids):
        if seen is not None:
            watermark = max(watermark, seen - grace_ms)
        watermarks[b] = watermark
        if b in newest:
            seen = newest[b] if seen is None else max(seen, newest[b])
    ordered = sorted(batch_ids)
    late_threshold = {b: watermarks[ordered[i - 1]] if i else 0 for i, b in enumerate(ordered)}
    start = kept["timestamp"] - kept["timestamp"] % window_ms
    counted = (start + window_ms) > kept["batch"].map(late_threshold)
    return _windows(kept.assign(window_start=start)[counted], window_ms), watermarks, int((~counted).sum())


def source_events(root: str) -> pd.DataFrame:
    """The generated input, read with plain deltalake (given the root's storage options; not the project's reader)."""
    table = open_table(f"{root}/topics/pageview-events").to_pyarrow_dataset().to_table(use_threads=False)
    return table.select(["partition", "offset", "timestamp", "category", "duration_s"]).to_pandas()
