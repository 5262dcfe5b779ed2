"""The interoperability tests run on the suite's one Spark session, which loads delta-spark when
bin/setup built its jars (``delta_spark = auto``): without them these tests fail, saying so."""

from __future__ import annotations

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from deltastreams.sinks import Topic


@pytest.fixture(scope="session")
def delta(spark):
    from deltastreams.streams._internal.spark import delta_spark

    assert delta_spark.available(spark), f"delta-spark is not in the test session: run bin/setup (it builds {delta_spark.JARS_DIR})"
    return spark


def retention_every(interval_ms: int) -> dict[str, int]:
    """Settings that make every retention step due every ``interval_ms`` (conf/defaults.toml
    [retention]), with files counted as many as soon as there are two."""
    return {
        "retention.purge_interval_ms": interval_ms,
        "retention.compaction_interval_ms": interval_ms,
        "retention.compaction_min_files": 2,
        "retention.optimize_interval_ms": interval_ms,
        "retention.optimize_min_files": 2,
        "retention.file_cleanup_interval_ms": interval_ms,
        "retention.log_cleanup_interval_ms": interval_ms,
    }


def table_form(topic: Topic) -> pa.Table:
    """What ``Topic.read()`` gives, in the topic's Delta columns (what a Delta reader sees)."""
    records = topic.read()
    columns = topic.layout.to_table_columns(records, topic.name)
    return columns.add_column(0, "partition", records.column("partition")).select(topic.layout.table_schema().names)


def assert_reads_like_us(spark, frame, topic: Topic) -> int:
    """``frame`` (a Spark read of ``topic``) holds exactly the records ``Topic.read()`` gives;
    returns how many."""
    expected = table_form(topic)
    names = sorted(expected.column_names)
    assert sorted(frame.columns) == names, f"{topic.name}: {frame.columns}"
    assert_df_equality(
        frame.select(names), spark.createDataFrame(expected).select(names), ignore_row_order=True, ignore_nullable=True, ignore_metadata=True
    )
    return expected.num_rows
