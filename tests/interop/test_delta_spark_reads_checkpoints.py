"""A topic whose checkpoints ``Topic.append`` wrote itself, each from the previous checkpoint and the
commits since (sinks/_internal/log_checkpoint.py, issue 42), with small files merged and the
commit files before the newest checkpoint cleaned, so a reader has that checkpoint to start
from: delta-spark reads the same records as ``Topic.read()``, and both the records appended."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltastreams.sinks import create_topic
from deltastreams.sinks._internal import delta_log, log_checkpoint, small_files
from tests.interop.conftest import assert_reads_like_us

pytestmark = pytest.mark.spark

APPENDS = 35
INTERVAL = 10


def test_delta_spark_reads_a_topic_from_a_checkpoint_written_here(delta, tmp_path, monkeypatch):
    monkeypatch.setattr(small_files, "MIN_FILES", 4)  # a merge at every checkpoint
    monkeypatch.setattr(small_files, "FAN_IN", 2)
    topic = create_topic(
        tmp_path, "events", partitions=2, key_type=pa.string(), value_type=pa.int64(), checkpoint_interval=INTERVAL, log_retention=timedelta(milliseconds=1)
    )
    for i in range(APPENDS):
        values = list(range(i * 5, i * 5 + 5))
        topic.append(pa.table({"key": [f"k{v % 7}" for v in values], "value": pa.array(values, pa.int64()), "timestamp": pa.array(values, pa.int64())}))

    head = topic.version()
    newest = log_checkpoint.previous_checkpoint(topic.uri)
    assert newest is not None and newest > INTERVAL  # the first checkpoint is delta-rs' (nothing to build on), later ones are ours
    assert delta_log.oldest_commit(topic.uri, head) == newest  # the commits before it are cleaned: readers start from it
    files = len(topic.delta_table().get_add_actions(flatten=True))
    assert files < 2 * APPENDS  # merged
    assert sorted(topic.read().column("value").to_pylist()) == list(range(APPENDS * 5))
    assert assert_reads_like_us(delta, delta.read.format("delta").load(topic.uri), topic) == APPENDS * 5
    assert pq.read_metadata(f"{topic.uri}/_delta_log/{newest:020d}.checkpoint.parquet").created_by.startswith("parquet-cpp-arrow")  # ours, not delta-rs' (parquet-rs)
