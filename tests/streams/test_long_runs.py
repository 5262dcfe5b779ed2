"""Long runs: the pageview job, under each guarantee, commits past the second checkpoint of every
internal topic, output and transaction log, and its final counts equal an independent
computation. A checkpoint is where at_least_once once stopped (at Delta's default interval, its
100th commit: the checkpoint loaded the table before the committer had recorded the version it had
just written); the application's tables are created here with a checkpoint every
``CHECKPOINT_INTERVAL`` commits (``retention.log_checkpoint_interval``), which runs the same code
in a quarter of the triggers. One trigger per input version: the input comes in ``VERSIONS`` small
appends (or Kafka records cut the same way by ``max_records_per_batch``).

Sources and roots: a Delta source on a local root, and a Kafka source (a real broker) with the root
on an object store (a real S3-compatible server), each under both guarantees."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from deltastreams.conf import StreamsConfig
from deltastreams.devtools.harness.pageview_reference import final_counts, source_events
from deltastreams.jobs import pageview
from deltastreams.sinks import open_table, use_storage_options
from deltastreams.streams.app import StreamsApp

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CHECKPOINT_INTERVAL = 20
VERSIONS = 3 * CHECKPOINT_INTERVAL
RECORDS_PER_VERSION = 12
WINDOW_MS, GRACE_MS = 5000, 10_000


def run_until_caught_up(spark, root: str, guarantee: str, state_dir, **settings) -> StreamsApp:
    config = StreamsConfig.load(
        {
            "application_id": pageview.APPLICATION_ID,
            "root": root,
            "state_dir": str(state_dir),
            "processing_guarantee": guarantee,
            "num_partitions": 3,
            "commit_interval_ms": 50,
            "max_records_per_batch": RECORDS_PER_VERSION,
            "retention.log_checkpoint_interval": CHECKPOINT_INTERVAL,
            **settings,
        }
    )
    app = StreamsApp(pageview.build_topology(window_ms=WINDOW_MS, grace_ms=GRACE_MS), config, spark=spark)
    app.run(until_caught_up=True, timeout_s=600)
    return app


def table_versions(root: str) -> dict[str, int]:
    """Every internal topic, output topic and transaction log of the application: its version
    (each created with the application's checkpoint interval)."""
    names = [f"topics/{pageview.OUTPUT_TOPIC}", f"topics/{pageview.APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition",
             f"topics/{pageview.APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog",
             f"transactions/{pageview.APPLICATION_ID}/subtopology-0", f"transactions/{pageview.APPLICATION_ID}/subtopology-1"]
    tables = {name: open_table(f"{root}/{name}") for name in names}
    assert {name: t.metadata().configuration.get("delta.checkpointInterval") for name, t in tables.items()} == dict.fromkeys(names, str(CHECKPOINT_INTERVAL))
    return {name: t.version() for name, t in tables.items()}


def assert_long_run_correct(spark, app: StreamsApp, root: str, reference_root: str) -> None:
    versions = table_versions(root)
    # Every table passed its second checkpoint; a transaction log has more versions than batches
    # under exactly_once (an epoch registration), never fewer.
    assert min(versions.values()) > 2 * CHECKPOINT_INTERVAL, versions
    assert sum(1 for m in app.history if m.subtopology == 0 and m.records_in) >= 2 * CHECKPOINT_INTERVAL
    expected = final_counts(source_events(reference_root), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    actual = pageview.read_results(root).to_pandas()
    types = {"window_start": "int64", "window_end": "int64", "count": "int64"}
    assert_df_equality(
        spark.createDataFrame(actual[expected.columns].astype(types)), spark.createDataFrame(expected.astype(types)), ignore_row_order=True
    )


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_delta_source_on_a_local_root_runs_past_its_second_checkpoint(spark, tmp_path, guarantee):
    root = str(tmp_path / "root")
    pageview.generate(root, VERSIONS * RECORDS_PER_VERSION, seed=21, batches=VERSIONS, max_lateness_ms=8000)
    app = run_until_caught_up(spark, root, guarantee, tmp_path / "state")
    assert_long_run_correct(spark, app, root, root)


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_kafka_source_with_an_object_store_root_runs_past_its_second_checkpoint(spark, broker, s3_server, s3_root, tmp_path, guarantee):
    broker.delete_topic(pageview.INPUT_TOPIC)  # its name is fixed and the broker is the session's
    events = VERSIONS * RECORDS_PER_VERSION
    pageview.generate_to_kafka(broker.bootstrap_servers, events, seed=22, max_lateness_ms=8000)
    reference = str(tmp_path / "reference")  # the same events, partitions and offsets, as a Delta topic
    pageview.generate(reference, events, seed=22, max_lateness_ms=8000)
    kafka = {"kafka.bootstrap_servers": broker.bootstrap_servers, "kafka.source_topics": [pageview.INPUT_TOPIC], "kafka.value_format": "json"}
    try:
        app = run_until_caught_up(spark, s3_root, guarantee, tmp_path / "state", storage_options=s3_server.storage_options, **kafka)
        assert_long_run_correct(spark, app, s3_root, reference)
    finally:
        use_storage_options(None)
