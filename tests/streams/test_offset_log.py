"""The driver plans each trigger from Spark's offset log: pin its format against this Spark."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from sinks import create_topic
from streams._internal.spark.offset_log import OffsetLogError, SparkOffsetLog

pytestmark = pytest.mark.spark


def test_the_offset_log_of_a_batch_holds_our_source_offset_in_its_third_line(spark, tmp_path):
    topic = create_topic(tmp_path, "clicks", partitions=2, key_type=pa.string(), value_type=pa.int64())
    topic.append(pa.table({"key": ["a", "b"], "value": pa.array([1, 2], pa.int64()), "timestamp": pa.array([1, 2], pa.int64())}))
    checkpoint = str(tmp_path / "checkpoint")
    seen = []
    frame = (
        spark.readStream.format("deltastreams")
        .option("topics", json.dumps([{"name": "clicks", "uri": topic.uri}]))
        .option("start_versions", json.dumps({"clicks": -1}))
        .load()
    )
    query = frame.writeStream.foreachBatch(lambda df, batch_id: seen.append(batch_id)).option("checkpointLocation", checkpoint).start()
    try:
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        query.stop()
    assert seen[0] == 0
    assert SparkOffsetLog(checkpoint).end_offsets(0) == {"clicks": 1}
    with pytest.raises(OffsetLogError, match="no batch 7"):
        SparkOffsetLog(checkpoint).end_offsets(7)
