"""Upgrading the pageview topology between two runs of one application (docs/operations.md,
"Upgrading a topology"): one unnamed filter added upstream of the count shifts the count's
generated store and repartition-topic names, so the start is refused, naming them, unless the
loss is accepted; with the store named in both versions, counting goes on from the committed state.

Input: one partition of pageviews that all pass the duration filter, in order, never late (grace
far above the span), the second run's events falling in the first run's windows, so each window's
final count tells whether the committed state was found.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.devtools.pageview_variants import build_variant
from deltastreams.jobs.pageview import APPLICATION_ID, input_topic, read_results
from deltastreams.jobs.pageview_data import VALUE_TYPE
from deltastreams.sinks import open_table
from deltastreams.sinks.transaction import log_property
from deltastreams.streams._internal.runtime.topology_guard import check_topology_upgrade
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.errors import TopologyUpgradeError

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
WINDOW_MS, GRACE_MS = 5000, 600_000
CATEGORIES = ["c0", "c1", "c2", "c3"]
EXCLUDED = ["c3"]
STORE_3 = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
STORE_4 = "KSTREAM-AGGREGATE-STATE-STORE-0000000004"
RESULT_SCHEMA = "category string, window_start bigint, window_end bigint, count bigint"


def events(run: int) -> pd.DataFrame:
    """40 pageviews over 10 s (two windows), run 2's interleaved between run 1's."""
    i = pd.RangeIndex(40)
    return pd.DataFrame(
        {
            "user_id": [f"u{n % 7}" for n in i],
            "page_id": "p",
            "category": [CATEGORIES[(n * 3 + run) % len(CATEGORIES)] for n in i],
            "duration_s": 60,
            "timestamp": T0 + i * 250 + (125 if run == 2 else 0),
        }
    )


def append(root: str, frame: pd.DataFrame) -> None:
    value = pa.StructArray.from_arrays(
        [pa.array(frame[c].tolist(), f.type) for c, f in zip(["user_id", "page_id", "category", "duration_s"], VALUE_TYPE, strict=True)],
        fields=list(VALUE_TYPE),
    )
    input_topic(root, partitions=1).append(pa.table({"key": frame["user_id"].tolist(), "value": value, "timestamp": frame["timestamp"].tolist()}))


def counts(*frames: pd.DataFrame) -> pd.DataFrame:
    """The count per category and window of ``frames`` together (each filtered as its run was)."""
    rows = pd.concat(frames)
    rows = rows.assign(window_start=rows["timestamp"] - rows["timestamp"] % WINDOW_MS)
    out = rows.groupby(["category", "window_start"]).size().reset_index(name="count")
    out["window_end"] = out["window_start"] + WINDOW_MS
    return out[["category", "window_start", "window_end", "count"]]


def config(root: str, **settings) -> StreamsConfig:
    return StreamsConfig.load(
        {"application_id": APPLICATION_ID, "root": root, "commit_interval_ms": 100, "num_partitions": 2, "state_dir": str(Path(root) / "state"), **settings}
    )


def topology(**options):
    """The pageview topology, or with ``options`` the variant that shifts its names (devtools.pageview_variants)."""
    return build_variant(window_ms=WINDOW_MS, grace_ms=GRACE_MS, **options)


def run(spark, root: str, topology_, **settings) -> None:
    StreamsApp(topology_, config(root, **settings), spark=spark).run(until_caught_up=True, timeout_s=300)


def assert_results(spark, root: str, expected: pd.DataFrame) -> None:
    from chispa import assert_df_equality

    actual = spark.createDataFrame(read_results(root).to_pandas(), schema=RESULT_SCHEMA)
    assert_df_equality(actual, spark.createDataFrame(expected, schema=RESULT_SCHEMA), ignore_row_order=True, ignore_nullable=True)


def log_uri(root: str, sub: int) -> str:
    return f"{root}/transactions/{APPLICATION_ID}/subtopology-{sub}"


def test_an_unnamed_filter_upstream_of_the_count_is_refused_with_the_names_unless_the_loss_is_accepted(spark, tmp_path):
    root = str(tmp_path)
    first, second = events(1), events(2)
    append(root, first)
    run(spark, root, topology())
    assert STORE_3 in log_property(log_uri(root, 1), "deltastreams.topology")  # recorded with the first batch
    versions = [open_table(log_uri(root, s)).version() for s in (0, 1)]

    upgraded = topology(exclude_categories=EXCLUDED)
    with pytest.raises(TopologyUpgradeError) as refused:
        StreamsApp(upgraded, config(root), spark=spark).start()
    message = str(refused.value)
    stored = re.search(rf"store {STORE_3} -> {STORE_4} \(its ([0-9,]+) committed entries would be ignored\)", message)
    assert stored is not None and int(stored.group(1).replace(",", "")) >= len(counts(first)), message
    assert f"repartition topic {STORE_3}-repartition -> {STORE_4}-repartition (its 0 records not yet consumed would be ignored)" in message
    assert f'count(..., name="{STORE_3}")' in refused.value.action and "accept_loss" in refused.value.action
    assert [open_table(log_uri(root, s)).version() for s in (0, 1)] == versions  # refused before writing anything (no epoch taken)

    append(root, second)
    run(spark, root, upgraded, topology_upgrade="accept_loss")
    # Accepted: the new store started empty, so a window's latest count is the second run's alone
    # (the excluded category got no new revision and keeps the first run's count).
    kept = second[~second["category"].isin(EXCLUDED)]
    expected = pd.concat([counts(kept), counts(first[first["category"].isin(EXCLUDED)])])
    assert_results(spark, root, expected)
    assert STORE_4 in log_property(log_uri(root, 1), "deltastreams.topology")  # the new topology is the committed one now
    assert check_topology_upgrade(upgraded, config(root)) == {}  # its next start needs no flag, and records nothing


def test_with_the_store_named_in_both_versions_the_upgrade_starts_and_keeps_counting(spark, tmp_path):
    root = str(tmp_path)
    first, second = events(1), events(2)
    append(root, first)
    run(spark, root, topology(store_name="counts"))
    append(root, second)
    run(spark, root, topology(store_name="counts", exclude_categories=EXCLUDED))
    assert_results(spark, root, counts(first, second[~second["category"].isin(EXCLUDED)]))
    assert "KSTREAM-FILTER-0000000003" in log_property(log_uri(root, 0), "deltastreams.topology")  # re-recorded: the description changed


def test_state_committed_before_topologies_were_recorded_starts_and_gets_recorded(tmp_path):
    """No Spark: transaction logs with decided batches and no record (an application committed
    before this guard) are not compared; the check returns the record for every log."""
    from deltastreams.sinks.transaction import DecidedBatch, TransactionLog

    root = str(tmp_path)
    for sub in (0, 1):
        log = TransactionLog(log_uri(root, sub), f"{APPLICATION_ID}/subtopology-{sub}")
        log.register("old")
        log.decide(DecidedBatch(0, log.epoch, {"pageview-events" if sub == 0 else f"{STORE_3}-repartition": (-1, 1)}))
    records = check_topology_upgrade(topology(exclude_categories=EXCLUDED), config(root))
    assert sorted(records) == [0, 1] and STORE_4 in records[1]
