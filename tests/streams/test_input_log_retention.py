"""An application stopped for longer than its input topic's log retention (issue 42): its writer
deleted the commit files past the application's position, so the application refuses to start
with an error naming the topic, its position and the reset that goes on (before its query runs:
no batch fails), and after that reset it reads on from the oldest kept version."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import LogRetentionError
from deltastreams.jobs.pageview import INPUT_TOPIC, build_topology, generate
from deltastreams.jobs.pageview_data import VALUE_TYPE
from deltastreams.sinks import create_topic, files_added
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.reset import ResetTarget, reset

pytestmark = pytest.mark.spark


def config(root) -> StreamsConfig:
    return StreamsConfig.load(
        {"application_id": "pageview", "root": str(root), "processing_guarantee": "exactly_once", "num_partitions": 2, "commit_interval_ms": 100}
    )


def test_an_application_behind_its_inputs_log_stops_clearly_and_a_reset_goes_on(spark, tmp_path):
    import pyarrow as pa

    topic = create_topic(
        tmp_path, INPUT_TOPIC, partitions=2, key_type=pa.string(), value_type=VALUE_TYPE, key_column="user_id", log_retention=timedelta(hours=1), checkpoint_interval=5
    )
    generate(str(tmp_path), 400, seed=1, batches=2)  # versions 1-2
    topology = build_topology()
    StreamsApp(topology, config(tmp_path), spark=spark).run(until_caught_up=True, timeout_s=240)
    generate(str(tmp_path), 1200, seed=2, batches=12)  # versions 3-14, checkpoints at 5 and 10
    then = time.time() - 2 * 3600
    for path in (Path(topic.uri) / "_delta_log").glob("*.json"):
        if int(path.name[:20]) < 12:  # written two hours ago, as far as retention can tell
            os.utime(path, (then, then))
    generate(str(tmp_path), 100, seed=3, batches=1)  # version 15: a checkpoint, and the log cut at 10
    assert not (Path(topic.uri) / "_delta_log" / f"{9:020d}.json").exists()

    behind_app = StreamsApp(topology, config(tmp_path), spark=spark)
    with pytest.raises(LogRetentionError) as behind:
        behind_app.start()
    assert behind_app.query is None  # refused before Spark ran anything
    message = str(behind.value)
    assert "input topic 'pageview-events': this application consumed it up to version 2, but the topic's log now starts at version 10" in message
    assert "--to-version pageview-events=9" in message

    reset(topology, config(tmp_path), ResetTarget(versions={INPUT_TOPIC: 9}))
    app = StreamsApp(topology, config(tmp_path), spark=spark)
    app.run(until_caught_up=True, timeout_s=240)
    kept = sum(f.num_records for f in files_added(topic.uri, 9, 15))
    assert kept == 600 and sum(m.records_in for m in app.history if m.subtopology == 0) == kept
