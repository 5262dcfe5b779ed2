"""The enrichment example on real Spark and Delta tables: pageviews joined with a users table that
changes while the job runs, counted per region, against an independent pandas computation
(each view takes its user's region as of the view's time), also under kill -9."""

from __future__ import annotations

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import TopologyError
from deltastreams.jobs import enrich
from deltastreams.devtools.harness import enrich as enrich_harness
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams.app import StreamsApp

pytestmark = pytest.mark.spark

ONE_ROUND = enrich_harness.ONE_ROUND  # one round of both topics per batch: see deltastreams.devtools.harness.enrich


def run(spark, root, **settings):
    config = StreamsConfig.load(
        {"application_id": enrich.APPLICATION_ID, "root": str(root), "commit_interval_ms": 100, "max_records_per_batch": ONE_ROUND, **settings}
    )
    app = StreamsApp(enrich.build_topology(), config, spark=spark)
    app.run(until_caught_up=True, timeout_s=240)
    return app


def frame(spark, table: pa.Table):
    return spark.createDataFrame(table.to_pandas())


def test_views_count_in_the_region_their_user_had_at_the_time(spark, tmp_path):
    enrich.generate(str(tmp_path), rounds=2, events_per_round=4_000, seed=1)
    run(spark, tmp_path)
    enrich.generate(str(tmp_path), rounds=2, events_per_round=4_000, seed=1)  # the table changes between runs
    run(spark, tmp_path, processing_guarantee="at_least_once")
    expected = enrich.reference_counts(str(tmp_path))
    assert_df_equality(frame(spark, enrich.read_results(str(tmp_path))), frame(spark, expected), ignore_row_order=True)
    assert "unknown" in expected.column("region").to_pylist()  # deleted users: the left join's missing row
    # The data make timing matter: joining every view with its user's final region counts differently.
    users = Topic.open(str(tmp_path), enrich.USERS_TOPIC).read().to_pylist()
    final = {u["key"]: (u["value"] or {}).get("region", "unknown") for u in users}
    views = Topic.open(str(tmp_path), enrich.VIEWS_TOPIC).read().select(["key"]).to_pylist()
    naive = sum(1 for v in views if final.get(v["key"], "unknown") == "unknown")
    unknown = sum(c for r, c in zip(expected["region"].to_pylist(), expected["count"].to_pylist(), strict=True) if r == "unknown")
    assert naive != unknown


def test_joined_topics_must_be_copartitioned(spark, tmp_path):
    create_topic(str(tmp_path), enrich.VIEWS_TOPIC, partitions=2, key_type=pa.string(), value_type=enrich.VALUE_TYPE, key_column="user_id")
    create_topic(str(tmp_path), enrich.USERS_TOPIC, partitions=3, key_type=pa.string(), value_type=enrich.USER_TYPE, key_column="user_id")
    with pytest.raises(TopologyError, match=r"not co-partitioned \(pageview-events: 2, users: 3\)"):
        run(spark, tmp_path)


@pytest.mark.slow
def test_kills_leave_the_enrichment_exactly_once(tmp_path):
    # deltastreams.devtools.harness.enrich at small scale: a round per trial, a kill at each commit point in turn.
    with open(tmp_path / "harness.log", "a") as log:
        kills, violations = enrich_harness.run(str(tmp_path), trials=4, seed=2, log=log)
    assert sum(n for point, n in kills.items() if point != "finished before the kill") >= 3, kills
    assert violations + enrich_harness.check(str(tmp_path)) == []
    assert enrich.reference_counts(str(tmp_path)).num_rows > 0
