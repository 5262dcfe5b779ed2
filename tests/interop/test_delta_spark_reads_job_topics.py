"""Every topic the example jobs write (outputs, repartition topics, changelogs, the dead-letter
topic) reads with delta-spark's ``spark.read.format("delta")`` exactly as this project reads it:
the same records, columns and types. Each job runs small, with retention due often, so the tables
hold purges, optimizes and compactions too. The pageview job's topics (with its repartition topic
and dead-letter topic) are checked in test_delta_streaming_source_over_outputs.py."""

from __future__ import annotations

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs import clicks, dedup, enrich
from deltastreams.sinks import Topic
from deltastreams.streams.app import StreamsApp
from tests.interop.conftest import assert_reads_like_us, retention_every

pytestmark = pytest.mark.spark

# Every retention step at every chance (conf/defaults.toml [retention]).
EAGER_RETENTION = retention_every(1)


def _enrich(root: str):
    enrich.generate(root, rounds=1, events_per_round=1_000, seed=1)
    return enrich.build_topology(), enrich.APPLICATION_ID


def _clicks(root: str):
    clicks.generate(root, rounds=1, per_round=300, seed=4)
    clicks.close(root)
    return clicks.build_topology(), clicks.APPLICATION_ID


def _dedup(root: str):
    dedup.generate(root, rounds=1, per_round=300, seed=6)
    return dedup.build_topology(), dedup.APPLICATION_ID


@pytest.mark.parametrize("job", [_enrich, _clicks, _dedup], ids=["enrich", "clicks", "dedup"])
def test_every_topic_a_job_writes_reads_the_same_with_delta_spark(delta, tmp_path, job):
    root = str(tmp_path)
    topology, application_id = job(root)
    inputs = {p.name for p in (tmp_path / "topics").iterdir()}
    config = StreamsConfig.load({"application_id": application_id, "root": root, "commit_interval_ms": 100, "max_records_per_batch": 1_000, **EAGER_RETENTION})
    StreamsApp(topology, config, spark=delta).run(until_caught_up=True, timeout_s=240)
    written = sorted(p.name for p in (tmp_path / "topics").iterdir() if p.name not in inputs)
    kinds = {"-changelog": 0, "-repartition": 0, "-dlq": 0}
    for name in written:
        topic = Topic.open(root, name)
        rows = assert_reads_like_us(delta, delta.read.format("delta").load(topic.uri), topic)
        for suffix in kinds:
            kinds[suffix] += name.endswith(suffix) and rows > 0
    outputs = [n for n in written if not n.endswith(tuple(kinds))]
    assert outputs and kinds["-changelog"], written  # every job has an output and a store
