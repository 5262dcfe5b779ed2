"""Every peer's final counts against an independent computation of what that peer must produce
from the same events (:mod:`deltastreams.devtools.harness.pageview_reference`, pandas; no code of any peer):

- deltastreams, Delta input: :func:`~deltastreams.devtools.harness.pageview_reference.final_counts`, Kafka Streams'
  semantics with a deterministic interleaving, exactly (whole Delta versions per batch, appended
  in time order, cut the input where every partition is at the same point);
- deltastreams, Kafka input: a batch cuts each Kafka partition at an offset, so which partition
  runs ahead at a cut decides a few records near the grace limit, as Kafka Streams' task
  interleaving does for it: its repartition topic is read back commit by commit (purged files
  stay on disk for retention's removed-file delay) and checked and counted as Kafka Streams' is,
  exactly; the difference from the deterministic interleaving is reported;
- Kafka Streams: its repartition topic is read back (read_committed) and checked to be a possible
  interleaving of the filtered input, then :func:`~deltastreams.devtools.harness.pageview_reference.kafka_streams_counts`
  counts over that order, exactly;
- Spark: the micro-batch that read each event comes from the query's own progress (end offsets per
  batch), then :func:`~deltastreams.devtools.harness.pageview_reference.spark_counts` applies Spark's watermark rule,
  exactly; the watermark of every batch is compared too.

Kafka topics are read with confluent-kafka's plain consumer (:mod:`deltastreams.devtools.bench.peers.kafka_topics`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from deltastreams.devtools.harness.pageview_reference import final_counts, kafka_streams_counts, spark_counts
from deltastreams.devtools.bench.peers.kafka_topics import read_repartition
from deltastreams.devtools.bench.peers.runners import GRACE_MS, MIN_DURATION_S, PARTITIONS, WINDOW_MS, Run, latest_counts

KEYS = ["category", "window_start"]


@dataclass
class Verdict:
    ok: bool
    windows: int
    counted: int
    """Records counted in all windows (the sum of the final counts)."""
    problems: list[str] = field(default_factory=list)
    versus_kafka_semantics: dict | None = None
    """For peers with semantics of their own: how their counts differ from Kafka's
    (:func:`final_counts` on the same events)."""

    def to_json(self) -> dict:
        return {"ok": self.ok, "windows": self.windows, "counted": self.counted, "problems": self.problems, "versus_kafka_semantics": self.versus_kafka_semantics}


def check(run: Run, events: pd.DataFrame, kafka_semantics: pd.DataFrame | None = None) -> Verdict:
    """``events``: the input as :func:`deltastreams.devtools.bench.peers.inputs.source_frame` describes it;
    ``kafka_semantics``: ``final_counts`` of it, if already computed."""
    kafka_semantics = kafka_semantics if kafka_semantics is not None else reference(events)
    actual = latest_counts(run)
    problems: list[str] = []
    versus = None
    if run.peer == "deltastreams-delta":
        expected = kafka_semantics
    elif run.peer in ("kafka-streams", "deltastreams-kafka"):
        repartition = read_repartition(run.bootstrap_servers, run.repartition_topic) if run.peer == "kafka-streams" else deltastreams_repartition(run)
        expected, problems = kafka_streams_counts(events, repartition, window_ms=WINDOW_MS, grace_ms=GRACE_MS, min_duration_s=MIN_DURATION_S, partitions=PARTITIONS)
        versus = difference(kafka_semantics, expected)
    else:
        expected, problems = _spark_expectation(run, events)
        versus = difference(kafka_semantics, expected)
    mismatch = difference(expected, actual)
    if mismatch["windows_differing"]:
        problems.append(f"final counts differ from the expected ones: {mismatch}")
    return Verdict(not problems, len(actual), int(actual["count"].sum()), problems, versus)


def deltastreams_repartition(run: Run) -> pd.DataFrame:
    """Every record the pageview job's repartition topic under ``run.root`` ever held (commit by
    commit, purged ones too), by offset per partition: the order its downstream tasks processed
    them in (the merge of the upstream writers gave the offsets)."""
    from deltastreams.jobs.pageview import APPLICATION_ID, build_topology
    from deltastreams.sinks import Topic

    topology = build_topology()
    (internal,) = topology.internal_topics
    records = Topic.open(str(run.root), topology.physical_topic(APPLICATION_ID, internal)).read(after_version=0)  # (version 0 creates it)
    values = records.column("value").combine_chunks()
    frame = pa.Table.from_arrays(values.flatten(), names=[f.name for f in values.type]).to_pandas()
    frame.insert(0, "partition", records.column("partition").to_numpy().astype(np.int64))
    frame.insert(1, "offset", records.column("offset").to_numpy())
    frame.insert(2, "timestamp", records.column("timestamp").to_numpy().astype(np.int64))
    return frame


def reference(events: pd.DataFrame) -> pd.DataFrame:
    return final_counts(events, window_ms=WINDOW_MS, grace_ms=GRACE_MS, min_duration_s=MIN_DURATION_S, partitions=PARTITIONS)


def difference(expected: pd.DataFrame, actual: pd.DataFrame) -> dict:
    """Windows missing, extra or with another count, and the records those differences amount to."""
    both = expected[KEYS + ["count"]].merge(actual[KEYS + ["count"]], on=KEYS, how="outer", suffixes=("_expected", "_actual"), indicator=True)
    missing = int((both["_merge"] == "left_only").sum())
    extra = int((both["_merge"] == "right_only").sum())
    other = int(((both["_merge"] == "both") & (both["count_expected"] != both["count_actual"])).sum())
    records = int(both["count_actual"].fillna(0).sum() - both["count_expected"].fillna(0).sum())
    return {"windows_differing": missing + extra + other, "missing": missing, "extra": extra, "other_count": other, "records_more": records}


# -- Spark ------------------------------------------------------------------------------------------


def _spark_expectation(run: Run, events: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    timings = json.loads(run.timings_file.read_text())
    batches = sorted(timings["batches"], key=lambda b: b["batch_id"])
    batch_ids = [b["batch_id"] for b in batches]
    if run.peer == "spark-kafka":
        batch = _kafka_batches(events, batches)
    else:
        batch = _delta_batches(events, batches)
    problems = []
    unread = int((batch < 0).sum())
    if unread:
        problems.append(f"{unread:,} events were in no micro-batch's offsets")
    read = int(sum(b["rows"] for b in batches))
    if read != len(events):
        problems.append(f"the micro-batches read {read:,} rows, the input holds {len(events):,}")
    expected, watermarks, _ = spark_counts(events.assign(batch=batch), batch_ids, window_ms=WINDOW_MS, grace_ms=GRACE_MS, min_duration_s=MIN_DURATION_S)
    reported = {b["batch_id"]: _watermark_ms(b["watermark"]) for b in batches if b["rows"] and b["watermark"] is not None}
    wrong = {b: (w, watermarks[b]) for b, w in reported.items() if w != watermarks[b]}
    if wrong:
        problems.append(f"watermarks (Spark's, expected) differ at {len(wrong)} batches, e.g. {next(iter(wrong.items()))}")
    # Spark's numRowsDroppedByWatermark counts rows after the partial aggregation before the
    # shuffle (one per window and category per input partition), not input rows: it is no check.
    return expected, problems


def _offset(raw) -> dict:
    return json.loads(raw) if isinstance(raw, str) else raw


def _kafka_batches(events: pd.DataFrame, batches: list[dict]) -> np.ndarray:
    """Per event, the id of the micro-batch whose offset range held it (-1: none)."""
    batch = np.full(len(events), -1, dtype=np.int64)
    ids = np.array([b["batch_id"] for b in batches])
    for p in np.unique(events["partition"]):
        ends = np.array([int(next(iter(_offset(b["end_offset"]).values())).get(str(p), 0)) for b in batches])
        rows = np.flatnonzero(events["partition"].to_numpy() == p)
        position = np.searchsorted(np.maximum.accumulate(ends), events["offset"].to_numpy()[rows], side="right")
        batch[rows] = np.where(position < len(ids), ids[np.minimum(position, len(ids) - 1)], -1)
    return batch


def _delta_batches(events: pd.DataFrame, batches: list[dict]) -> np.ndarray:
    """Per event, the micro-batch that read its version of the plain table (one file per version:
    an offset at index -1 of version v has read the versions before v, at index >= 0 v too)."""
    through = []
    for b in batches:
        offset = _offset(b["end_offset"])
        through.append(offset["reservoirVersion"] - (1 if offset["index"] < 0 else 0))
    ids = np.array([b["batch_id"] for b in batches])
    position = np.searchsorted(np.maximum.accumulate(np.array(through)), events["append"].to_numpy(), side="left")
    return np.where(position < len(ids), ids[np.minimum(position, len(ids) - 1)], -1)


def _watermark_ms(iso: str) -> int:
    return int(round(pd.Timestamp(iso).timestamp() * 1000))
