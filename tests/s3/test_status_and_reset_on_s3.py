"""``status`` and ``reset`` on an object-store root (a real S3-compatible server): status reads
without writing anything, sees a live instance's heartbeat, and a reset keeps its plan, deletes
internal topics and records the new positions there. The application's commits are made here by
its own transaction log (no Spark needed to be where a run leaves them)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs.pageview import APPLICATION_ID, build_topology, generate
from deltastreams.sinks import Topic, create_topic, filesystem_for, under_root
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog
from deltastreams.streams._internal.runtime.heartbeat import Heartbeat
from deltastreams.streams.reset import ResetError, ResetTarget, reset
from deltastreams.streams.status import application_status, format_status

REPARTITION = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"


def listing(root: str) -> list[tuple[str, int]]:
    fs, path = filesystem_for(root)
    return sorted((i.path, i.size) for i in fs.get_file_info(pafs.FileSelector(path, recursive=True)) if i.type == pafs.FileType.File)


def test_status_and_reset_on_an_object_store_root(s3_root, tmp_path):
    topology = build_topology()
    config = StreamsConfig.load({"application_id": APPLICATION_ID, "root": s3_root, "state_dir": str(tmp_path / "state")})
    generate(s3_root, 200, batches=2, late_fraction=0.0)
    generate(s3_root, 50, seed=1, late_fraction=0.0)  # version 3: not consumed
    create_topic(s3_root, REPARTITION, partitions=2, key_type=pa.string(), value_type=pa.string())
    logs = {s: TransactionLog(under_root(s3_root, "transactions", APPLICATION_ID, f"subtopology-{s}"), f"{APPLICATION_ID}/subtopology-{s}") for s in (0, 1)}
    beat = Heartbeat(s3_root, APPLICATION_ID, "instance-1", lambda: {s: t.epoch for s, t in logs.items()})
    beat.start()
    try:
        for txlog in logs.values():
            txlog.register("instance-1")
        beat.beat()
        logs[0].decide(DecidedBatch(0, logs[0].epoch, {"pageview-events": (-1, 2)}))
        before = listing(s3_root)
        status = application_status(topology, config)
        assert listing(s3_root) == before  # read-only on S3 too
        assert status.state == "running" and status.subtopologies[0].holder.instance == "instance-1"
        events = status.subtopologies[0].inputs[0]
        assert (events.position, events.end, events.lag_versions, events.lag_records) == (2, 3, 1, 50)
        with pytest.raises(ResetError, match="is running"):
            reset(topology, config, ResetTarget(earliest=True))
    finally:
        beat.stop()
    assert "not alive: stopped at" in format_status(application_status(topology, config))

    report = reset(topology, config, ResetTarget(latest=True))
    assert report.positions == {"pageview-events": 3} and report.deleted_topics[0] == REPARTITION
    assert not Topic.exists(s3_root, REPARTITION)
    status = application_status(topology, config)
    assert status.state == "stopped" and status.reset_in_progress is None
    assert [s.inputs[0].position for s in status.subtopologies] == [3, -1]
    assert status.subtopologies[0].holder.instance.startswith("reset-")
