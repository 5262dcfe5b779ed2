"""The pageview job on real Spark and real Delta tables, against an independent computation."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from chispa import assert_df_equality

from deltastreams.conf import StreamsConfig
from deltastreams.devtools.pageview_variants import build_variant
from deltastreams.jobs.pageview import build_topology, generate, read_results
from deltastreams.streams.app import StreamsApp
from deltastreams.devtools.harness.pageview_reference import final_counts, source_events

pytestmark = pytest.mark.spark

WINDOW_MS, GRACE_MS = 5000, 5000


def run_pageview(spark, root, *, guarantee="at_least_once", max_records=1_000_000, functions="arrow", timeout_s=240, **settings):
    config = StreamsConfig.load(
        {
            "application_id": "pageview",
            "root": str(root),
            "processing_guarantee": guarantee,
            "num_partitions": 3,
            "commit_interval_ms": 100,
            "max_records_per_batch": max_records,
            **settings,
        }
    )
    app = StreamsApp(build_variant(window_ms=WINDOW_MS, grace_ms=GRACE_MS, functions=functions), config, spark=spark)
    app.run(until_caught_up=True, timeout_s=timeout_s)
    return app


def as_spark(spark, frame: pd.DataFrame):
    return spark.createDataFrame(frame.astype({"window_start": "int64", "window_end": "int64", "count": "int64"}))


def results_frame(root) -> pd.DataFrame:
    return read_results(str(root)).to_pandas()


def test_final_counts_equal_an_independent_computation(spark, tmp_path):
    generate(str(tmp_path), 20_000, seed=3, late_fraction=0.1, max_lateness_ms=20_000, batches=4)
    app = run_pageview(spark, tmp_path, max_records=6_000)
    expected = final_counts(source_events(str(tmp_path)), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    assert_df_equality(as_spark(spark, results_frame(tmp_path)), as_spark(spark, expected), ignore_row_order=True)
    assert app.progress.totals["dropped_late"] > 0  # the data has too-late records, and they were dropped


def test_one_append_or_twenty_give_the_same_counts(spark, tmp_path):
    one, twenty = tmp_path / "one", tmp_path / "twenty"
    generate(str(one), 12_000, seed=5, late_fraction=0.1, max_lateness_ms=20_000, batches=1)
    generate(str(twenty), 12_000, seed=5, late_fraction=0.1, max_lateness_ms=20_000, batches=20)
    run_pageview(spark, one, single_task_records=0)  # a Spark stage per sub-topology
    run_pageview(spark, twenty, max_records=600)  # each trigger in one Spark task
    assert_df_equality(as_spark(spark, results_frame(one)), as_spark(spark, results_frame(twenty)), ignore_row_order=True)


def test_in_local_mode_the_driver_calls_the_hosts_for_big_triggers_and_zero_keeps_spark_stages(spark, tmp_path):
    """Every trigger here is over ``single_task_records``: the driver runs its tasks itself once
    the hosts run (Spark's stages would only relay the calls, ~0.2 s a trigger); with 0 each
    trigger is a Spark job of a stage per sub-topology. The same counts either way."""
    # Jobs submitted so far, in any job group (a query's jobs carry its run's group).
    submitted = spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs

    def spark_jobs_and_triggers(root, single_task_records):
        generate(str(root), 12_000, seed=9, late_fraction=0.1, max_lateness_ms=20_000, batches=6)
        before = submitted()
        app = run_pageview(spark, root, max_records=2_000, single_task_records=single_task_records)
        return submitted() - before, sum(1 for m in app.history if m.subtopology == 0)

    driver_jobs, driver_triggers = spark_jobs_and_triggers(tmp_path / "driver", 500)
    stage_jobs, stage_triggers = spark_jobs_and_triggers(tmp_path / "stages", 0)
    assert driver_triggers >= 6 and stage_triggers >= 6
    # The application's start job (task host factories on the executors), and at most the first
    # trigger, if the hosts were not up yet (measured: 2, then 1 on a second run; with 0, 7 jobs
    # for 6 triggers, as every trigger here took before the driver ran big ones).
    assert driver_jobs <= 2, (driver_jobs, driver_triggers)
    assert stage_jobs >= stage_triggers + 1, (stage_jobs, stage_triggers)
    assert_df_equality(as_spark(spark, results_frame(tmp_path / "driver")), as_spark(spark, results_frame(tmp_path / "stages")), ignore_row_order=True)


def test_a_run_stopped_half_way_completes_on_restart(spark, tmp_path):
    generate(str(tmp_path), 12_000, seed=7, late_fraction=0.1, max_lateness_ms=20_000, batches=6)
    config = StreamsConfig.load({"application_id": "pageview", "root": str(tmp_path), "processing_guarantee": "at_least_once", "num_partitions": 3, "commit_interval_ms": 100, "max_records_per_batch": 2_000})
    app = StreamsApp(build_topology(window_ms=WINDOW_MS, grace_ms=GRACE_MS), config, spark=spark)
    app.start()
    import time

    while sum(1 for m in app.history if m.subtopology == 0) < 2:
        time.sleep(0.1)
    # A Python StreamingQueryListener costs the JVM half a core at a 100 ms interval (pyspark builds
    # each progress event field by field over py4j, on Spark's listener thread): the application has none.
    listeners = [listener.getClass().getName() for listener in spark._jsparkSession.streams().listListeners()]
    assert not [name for name in listeners if "Python" in name], listeners
    app.stop()
    half = sum(m.records_in for m in app.history if m.subtopology == 0)
    assert 0 < half < 12_000
    run_pageview(spark, tmp_path, max_records=2_000)
    expected = final_counts(source_events(str(tmp_path)), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    assert_df_equality(as_spark(spark, results_frame(tmp_path)), as_spark(spark, expected), ignore_row_order=True)


def test_deleted_local_state_is_rebuilt_from_the_changelog(spark, tmp_path):
    generate(str(tmp_path), 8_000, seed=9, batches=2)
    app = run_pageview(spark, tmp_path)
    assert app.progress.totals["records_in"] > 0
    shutil.rmtree(tmp_path / "state")
    generate(str(tmp_path), 8_000, seed=10, batches=2)
    second = run_pageview(spark, tmp_path)
    assert sum(m.restored_entries for m in second.history) > 0
    expected = final_counts(source_events(str(tmp_path)), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    assert_df_equality(as_spark(spark, results_frame(tmp_path)), as_spark(spark, expected), ignore_row_order=True)


def _bad_input(root):
    import pyarrow as pa

    from deltastreams.jobs.pageview_data import VALUE_TYPE
    from deltastreams.sinks import create_topic

    topic = create_topic(root, "pageview-events", partitions=2, key_type=pa.string(), value_type=VALUE_TYPE, key_column="user_id")
    views = [
        ("u1", "news", 40, 1_000),
        ("u2", None, 50, 1_100),  # null category: null key after the map
        ("u3", "news", None, 1_200),  # null duration: the filter cannot decide
        ("u4", "news", 35, 1_300),
        ("u5", "sport", 90, 1_400),
    ]
    value = pa.array([{"user_id": u, "page_id": "p", "category": c, "duration_s": d} for u, c, d, _ in views], VALUE_TYPE)
    topic.append(pa.table({"key": [v[0] for v in views], "value": value, "timestamp": pa.array([v[3] for v in views], pa.int64())}))


@pytest.mark.parametrize("functions", ["arrow", "column"])
def test_bad_records_go_to_the_dead_letter_topic_and_the_rest_is_counted(spark, tmp_path, functions):
    from deltastreams.sinks import Topic

    _bad_input(tmp_path)
    run_pageview(spark, tmp_path, functions=functions)
    dead = Topic.open(tmp_path, "pageview-dlq").read()
    reasons = sorted((v["source_offset"], v["source_topic"], v["reason"]) for v in dead.column("value").to_pylist())
    assert [r[1] for r in reasons] == ["pageview-events", "pageview-events"]
    assert any("null key" in r[2] for r in reasons) and any("predicate is null" in r[2] or "is null for this record" in r[2] for r in reasons)
    counts = {(r["category"], r["count"]) for r in read_results(str(tmp_path)).to_pylist()}
    assert counts == {("news", 2), ("sport", 1)}


def test_a_source_topic_with_an_unexpected_schema_stops_the_job_at_start(tmp_path):
    import pyarrow as pa

    from deltastreams.sinks import create_topic
    from deltastreams.streams.errors import SchemaMismatchError

    wrong = pa.struct([("user_id", pa.string()), ("page_id", pa.string()), ("category", pa.string()), ("duration_s", pa.string())])
    create_topic(tmp_path, "pageview-events", partitions=2, key_type=pa.string(), value_type=wrong, key_column="user_id")
    config = StreamsConfig.load({"application_id": "pageview", "root": str(tmp_path)})
    with pytest.raises(SchemaMismatchError, match="column 'duration_s' is string, the topology expects int32") as info:
        StreamsApp(build_topology(), config).start()
    assert info.value.topic == "pageview-events" and info.value.column == "duration_s"


def test_a_corrupt_store_is_moved_aside_and_rebuilt_and_the_counts_stay_right(spark, tmp_path):
    generate(str(tmp_path), 8_000, seed=12, batches=2)
    run_pageview(spark, tmp_path)
    store = next((tmp_path / "state" / "pageview" / "1_0").iterdir())
    (store / "CURRENT").write_text("MANIFEST-999999\n")  # what a torn write or a bad disk leaves
    generate(str(tmp_path), 8_000, seed=13, batches=2)
    second = run_pageview(spark, tmp_path)
    aside = [p.name for p in store.parent.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].startswith(store.name)  # kept for inspection
    assert sum(m.restored_entries for m in second.history) > 0  # rebuilt from the changelog
    expected = final_counts(source_events(str(tmp_path)), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    assert_df_equality(as_spark(spark, results_frame(tmp_path)), as_spark(spark, expected), ignore_row_order=True)
