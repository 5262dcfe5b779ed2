"""The expectations the peers benchmark holds Kafka Streams and Spark to (deltastreams.devtools.harness.pageview_reference),
on cases small enough to work out by hand."""

import heapq

import pandas as pd

from deltastreams.devtools.harness.pageview_reference import final_counts, kafka_streams_counts, spark_counts
from deltastreams.sinks import partition_for

WINDOW, GRACE = 5000, 10_000


def _users_of(source: int, n: int) -> list[str]:
    """``n`` user ids Kafka's partitioner puts in source partition ``source`` of 2."""
    users = (f"user-{i}" for i in range(10_000))
    return [u for u in users if partition_for(u.encode(), 2) == source][:n]


def _events(rows: list[tuple[int, int, str]]) -> pd.DataFrame:
    """rows: (source partition, timestamp, category), in offset order per partition."""
    users = {p: iter(_users_of(p, len(rows))) for p in (0, 1)}
    frame = pd.DataFrame(
        [(p, ts, next(users[p]), "page-1", c, 60) for p, ts, c in rows], columns=["partition", "timestamp", "user_id", "page_id", "category", "duration_s"]
    )
    frame.insert(1, "offset", frame.groupby("partition").cumcount())
    return frame


def _category_of(task: int) -> str:
    return next(c for c in (f"category-{i:02d}" for i in range(50)) if partition_for(c.encode(), 3) == task)


def test_spark_counts_judge_late_rows_by_the_previous_batch_watermark():
    # Measured on Spark 4.2 with one file per micro-batch: the row at 2000 in batch 2 is counted
    # (its window ended at 5000, batch 2's watermark is 20000, batch 1's was 0); the row at 12000
    # in batch 4 and the one at 23000 in batch 5 are dropped (batch 3's and 4's watermarks are
    # 20000 and 30000).
    batches = [[1000], [30000], [2000, 21000], [40000], [22000, 12000], [23000]]
    events = pd.DataFrame(
        [(ts, "a", 60, b) for b, stamps in enumerate(batches) for ts in stamps], columns=["timestamp", "category", "duration_s", "batch"]
    )
    counts, watermarks, dropped = spark_counts(events, list(range(len(batches))), window_ms=WINDOW, grace_ms=GRACE)
    assert watermarks == {0: 0, 1: 0, 2: 20000, 3: 20000, 4: 30000, 5: 30000}
    assert dict(zip(counts["window_start"], counts["count"])) == {0: 2, 20000: 2, 30000: 1, 40000: 1}
    assert dropped == 2


def test_spark_watermarks_ignore_filtered_rows_and_batches_without_data():
    events = pd.DataFrame(
        [(50_000, "a", 5, 0), (20_000, "a", 60, 0), (1000, "a", 60, 2)], columns=["timestamp", "category", "duration_s", "batch"]
    )
    # The 50 s row is filtered out before the watermark sees it; batch 1 read nothing.
    counts, watermarks, dropped = spark_counts(events, [0, 1, 2], window_ms=WINDOW, grace_ms=GRACE)
    assert watermarks == {0: 0, 1: 10_000, 2: 10_000}
    assert dropped == 1 and counts["count"].sum() == 1


def test_kafka_streams_counts_follow_the_order_the_repartition_topic_holds():
    task = 0
    category = _category_of(task)
    events = _events([(0, 30_000, category), (1, 10_000, category), (1, 31_000, category)])
    kept = events.assign(partition=task)
    # Source 0's record first: stream time 30 s, so source 1's record at 10 s (window end 15 s,
    # + grace 25 s <= 30 s) is late; the other way round it is counted.
    late_order = kept.iloc[[0, 1, 2]].assign(offset=[0, 1, 2])
    early_order = kept.iloc[[1, 0, 2]].assign(offset=[0, 1, 2])
    counts, problems = kafka_streams_counts(events, late_order, window_ms=WINDOW, grace_ms=GRACE)
    assert problems == [] and counts["count"].sum() == 2
    counts, problems = kafka_streams_counts(events, early_order, window_ms=WINDOW, grace_ms=GRACE)
    assert problems == [] and counts["count"].sum() == 3


def test_kafka_streams_counts_refuse_an_order_no_run_could_produce():
    category = _category_of(1)
    events = _events([(1, 10_000, category), (1, 11_000, category), (0, 12_000, category)])
    kept = events.assign(partition=1)
    swapped = kept.iloc[[1, 0, 2]].assign(offset=[0, 1, 2])  # source 1's records out of their order
    _, problems = kafka_streams_counts(events, swapped, window_ms=WINDOW, grace_ms=GRACE)
    assert any("in their order" in p for p in problems)
    _, problems = kafka_streams_counts(events, kept.iloc[[0, 2]].assign(offset=[0, 1]), window_ms=WINDOW, grace_ms=GRACE)
    assert any("holds 2 records" in p for p in problems)
    _, problems = kafka_streams_counts(events, kept.assign(partition=0, offset=[0, 1, 2]), window_ms=WINDOW, grace_ms=GRACE)
    assert any("not in their category's partition" in p for p in problems)


def test_kafka_streams_counts_equal_final_counts_for_the_timestamp_interleaving():
    rows = [(s, ts, _category_of(t)) for s, t, ts in
            [(0, 0, 40_000), (1, 0, 12_000), (0, 0, 41_000), (1, 1, 9_000), (0, 1, 30_000), (1, 1, 8_000), (0, 2, 1000), (1, 2, 26_000)]]
    events = _events(rows)
    target = events["category"].map(lambda c: partition_for(c.encode(), 3))
    merged = []
    for task in sorted(target.unique()):
        mine = events[target == task]
        sequences = [list(seq.itertuples(index=False)) for _, seq in mine.groupby("partition")]
        merged += [r._asdict() | {"partition": task} for r in heapq.merge(*sequences, key=lambda r: r.timestamp)]
    repartition = pd.DataFrame(merged)
    repartition["offset"] = repartition.groupby("partition").cumcount()
    counts, problems = kafka_streams_counts(events, repartition, window_ms=WINDOW, grace_ms=GRACE)
    assert problems == []
    pd.testing.assert_frame_equal(counts, final_counts(events, window_ms=WINDOW, grace_ms=GRACE))
