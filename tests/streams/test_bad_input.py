"""Bad input from writers other than deltastreams never leaves a job stuck or silently wrong
(docs/bad-input.md). A count per key over an input topic that good appends and one contract-breaking
append fill: with ``on_bad_record = "dlq"`` the bad file's records go to the dead-letter topic,
named by topic, version and file, and the counts are those of the good records alone; with
``"fail"`` the job stops before the bad version, names the ``skip`` command, and goes on after it,
or after the user deleted the rows themselves. Schema changes that drop or retype a column the
topology reads stop the job naming the column. The expectation is counted from the good records
in the test, not by the project's code."""

from __future__ import annotations

import logging
import time
from collections import Counter

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable, write_deltalake

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError, SchemaMismatchError
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import ApplicationFailedError, StreamsApp
from deltastreams.streams.skip import skip
from deltastreams.streams.status import application_status, format_status

pytestmark = pytest.mark.spark

APP = "counter"
GOOD_1 = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
GOOD_2 = [("b", 5), ("c", 6), ("a", 7)]


def topology():
    builder = StreamsBuilder()
    builder.stream("events").group_by_key().count().to_stream().to("counts")
    return builder.build()


def config(root, **settings) -> StreamsConfig:
    return StreamsConfig.load({"application_id": APP, "root": str(root), "commit_interval_ms": 100, "retention.enabled": "false", **settings})


def ours(records) -> pa.Table:
    return pa.table({"key": [k for k, _ in records], "value": pa.array([v for _, v in records], pa.int64()), "timestamp": pa.array([v for _, v in records], pa.int64())})


def external(keys, *, partition=0, offsets=None, column="value") -> pa.Table:
    """Rows as a pandas or polars writer appends them (``column``: the value's column, or a misspelling of it)."""
    n = len(keys)
    return pa.table(
        {
            "partition": pa.array([partition] * n, pa.int32()),
            "offset": pa.array(offsets if offsets is not None else [None] * n, pa.int64()),
            "timestamp": pa.array(range(100, 100 + n), pa.int64()),
            "key": keys,
            column: pa.array(range(100, 100 + n), pa.int64()),
        }
    )


def truncated(uri: str) -> None:
    """A good append whose file is then damaged (not Parquet any more)."""
    before = set(DeltaTable(uri).get_add_actions(flatten=True).column("path").to_pylist())
    write_deltalake(uri, external(["u", "v"]), mode="append")
    (added,) = set(DeltaTable(uri).get_add_actions(flatten=True).column("path").to_pylist()) - before
    with open(f"{uri}/{added}", "r+b") as f:
        f.truncate(16)


BAD_APPENDS = {
    "null partition": (lambda uri: write_deltalake(uri, external(["x", "y"], partition=None), mode="append"), 2, "has a null partition"),
    "offsets taken": (lambda uri: write_deltalake(uri, external(["x", "y"], offsets=[0, 1]), mode="append"), 2, "those offsets are taken"),
    "mixed offsets": (lambda uri: write_deltalake(uri, external(["x", "y"], offsets=[None, 9]), mode="append"), 2, "1 rows without an offset among rows with one"),
    "unreadable file": (truncated, 1, "cannot be read"),
    "misspelled column": (
        lambda uri: write_deltalake(uri, external(["x", "y"], column="valeu"), mode="append", schema_mode="merge"),
        2,
        "holds values in column(s) ['valeu'], which topic 'events' does not have",
    ),
}


def prepare(root) -> Topic:
    """Version 1: good records of ours; version 2: the bad append (per test); version 3: more good records."""
    topic = create_topic(str(root), "events", partitions=2, key_type=pa.string(), value_type=pa.int64())
    topic.append(ours(GOOD_1))
    return topic


def counts(spark, root) -> dict[str, int]:
    latest = {}
    for row in Topic.open(str(root), "counts").read().to_pylist():  # revisions in offset order per key's partition
        latest[row["key"]] = row["value"]
    return latest


def assert_counts(spark, root, expected: dict[str, int]) -> None:
    got = spark.createDataFrame(sorted(counts(spark, root).items()), "key string, count long")
    want = spark.createDataFrame(sorted(expected.items()), "key string, count long")
    assert_df_equality(got, want, ignore_row_order=True)


def good_counts(*batches) -> dict[str, int]:
    return dict(Counter(k for batch in batches for k, _ in batch))


@pytest.mark.parametrize("kind", list(BAD_APPENDS))
def test_bad_input_goes_to_the_dead_letter_topic_named_by_topic_version_and_file(spark, tmp_path, kind):
    topic = prepare(tmp_path)
    append_bad, letters, why = BAD_APPENDS[kind]
    append_bad(topic.uri)
    topic.append(ours(GOOD_2))
    StreamsApp(topology(), config(tmp_path), spark=spark).run(until_caught_up=True, timeout_s=120)
    assert_counts(spark, tmp_path, good_counts(GOOD_1, GOOD_2))
    dead = Topic.open(str(tmp_path), f"{APP}-dlq").read().column("value").to_pylist()
    assert len(dead) == letters, dead
    bad_file = DeltaTable(topic.uri, version=2).get_add_actions(flatten=True).column("path").to_pylist()
    added_at_2 = set(bad_file) - set(DeltaTable(topic.uri, version=1).get_add_actions(flatten=True).column("path").to_pylist())
    for letter in dead:
        assert letter["source_topic"] == "events" and letter["node"] == "KSTREAM-SOURCE-0000000000"
        assert letter["reason"].startswith("events version 2, file ") and why in letter["reason"], letter["reason"]
        assert any(path in letter["reason"] for path in added_at_2)
    if letters == 2:  # the rows themselves, as written, ready to be appended again
        assert sorted(eval_json(letter["value"])["key"] for letter in dead) == ["x", "y"]
    # Exactly once: a second run finds nothing new to do, and writes no letter twice.
    StreamsApp(topology(), config(tmp_path), spark=spark).run(until_caught_up=True, timeout_s=120)
    assert Topic.open(str(tmp_path), f"{APP}-dlq").read().num_rows == letters


def eval_json(text: str) -> dict:
    import json

    return json.loads(text)


def test_fail_stops_before_the_bad_version_naming_a_skip_that_keeps_state(spark, tmp_path):
    topic = prepare(tmp_path)
    BAD_APPENDS["null partition"][0](topic.uri)
    topic.append(ours(GOOD_2))
    app = StreamsApp(topology(), config(tmp_path, on_bad_record="fail"), spark=spark)
    with pytest.raises(ApplicationFailedError) as failed:
        app.run(until_caught_up=True, timeout_s=120)
    failure = failed.value.failure
    assert "input topic 'events' version 2, file partition=__HIVE_DEFAULT_PARTITION__/" in failure.what and "null partition" in failure.what
    assert f"python -m deltastreams.jobs.skip --root {tmp_path} --application-id {APP} --topic events --version 2 --file" in failure.action
    assert "DELETE" in failure.action
    assert_counts(spark, tmp_path, good_counts(GOOD_1))  # what came before the bad version was processed and committed
    path = failure.action.split("--file ")[1].split("`")[0].strip("'")
    report = skip(config(tmp_path), "events", 2, path)
    assert report.skip.reason.startswith("has a null partition") and sorted(report.recorded) == [0]
    text = format_status(application_status(topology(), config(tmp_path)))
    assert f"skipped: events version 2, file {path}" in text and "null partition" in text
    StreamsApp(topology(), config(tmp_path, on_bad_record="fail"), spark=spark).run(until_caught_up=True, timeout_s=120)
    assert_counts(spark, tmp_path, good_counts(GOOD_1, GOOD_2))  # state kept: the counts go on from where they were
    assert Topic.open(str(tmp_path), f"{APP}-dlq").read().num_rows == 0
    with pytest.raises(DeltaStreamsError, match="has consumed 'events' up to version 3 already"):
        skip(config(tmp_path), "events", 2, path)


def test_the_users_own_fix_deleting_the_rows_with_delta_rs_lets_the_job_go_on(spark, tmp_path):
    topic = prepare(tmp_path)
    BAD_APPENDS["offsets taken"][0](topic.uri)
    topic.append(ours(GOOD_2))
    with pytest.raises(ApplicationFailedError, match="version 2"):
        StreamsApp(topology(), config(tmp_path, on_bad_record="fail"), spark=spark).run(until_caught_up=True, timeout_s=120)
    text = format_status(application_status(topology(), config(tmp_path)))
    assert "bad input ahead: events version 2, file partition=0/" in text and "those offsets are taken" in text
    DeltaTable(topic.uri).delete("key IN ('x', 'y')")  # version 4 removes the bad file
    StreamsApp(topology(), config(tmp_path, on_bad_record="fail"), spark=spark).run(until_caught_up=True, timeout_s=120)
    assert_counts(spark, tmp_path, good_counts(GOOD_1, GOOD_2))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("retyped", r"since version 1 \(where the application stands\) column 'value' is string, not int64"),
        ("renamed", r"its layout \(the table's description\) names column 'value', which the Delta table at .* does not have"),
    ],
)
def test_a_schema_change_that_drops_or_retypes_a_column_stops_the_job_naming_it(spark, tmp_path, change, message):
    topic = prepare(tmp_path)
    app = StreamsApp(topology(), config(tmp_path), spark=spark)
    app.run(until_caught_up=True, timeout_s=120)
    columns = {"partition": pa.array([0], pa.int32()), "offset": pa.array([None], pa.int64()), "timestamp": pa.array([1], pa.int64()), "key": ["z"]}
    columns["value" if change == "retyped" else "amount"] = pa.array(["7"]) if change == "retyped" else pa.array([7], pa.int64())
    write_deltalake(topic.uri, pa.table(columns), mode="overwrite", schema_mode="overwrite")
    # At start: the change lies between the application's position and the topic's head.
    with pytest.raises(SchemaMismatchError, match=message) as refused:
        StreamsApp(topology(), config(tmp_path), spark=spark).start()
    assert refused.value.column == "value"


def test_a_schema_change_is_named_when_the_running_job_reaches_it(spark, tmp_path):
    topic = prepare(tmp_path)
    app = StreamsApp(topology(), config(tmp_path), spark=spark)
    app.start()
    deadline = time.monotonic() + 60
    while app.committer.position(0, "events") < 1 and time.monotonic() < deadline:  # version 1 consumed first
        time.sleep(0.05)
    columns = {"partition": pa.array([0], pa.int32()), "offset": pa.array([None], pa.int64()), "timestamp": pa.array([1], pa.int64()), "key": ["z"], "value": pa.array(["7"])}
    write_deltalake(topic.uri, pa.table(columns), mode="overwrite", schema_mode="overwrite")
    with pytest.raises(ApplicationFailedError) as failed:
        app.run(until_caught_up=True, timeout_s=120)
    assert "version 2 changed its schema: column 'value' is string, not int64" in failed.value.failure.what
    assert_counts(spark, tmp_path, good_counts(GOOD_1))


def test_a_column_added_that_no_row_fills_is_named_in_the_log_and_read_around(spark, tmp_path, caplog):
    topic = prepare(tmp_path)
    rows = external(["x"]).append_column("note", pa.nulls(1, pa.string()))
    write_deltalake(topic.uri, rows, mode="append", schema_mode="merge")  # a new column, empty
    with caplog.at_level(logging.WARNING, logger="deltastreams"):
        StreamsApp(topology(), config(tmp_path), spark=spark).run(until_caught_up=True, timeout_s=120)
    assert any("column(s) ['note'], which are not in its layout" in r.getMessage() for r in caplog.records)
    assert_counts(spark, tmp_path, good_counts(GOOD_1, [("x", 100)]))
    assert not Topic.exists(str(tmp_path), f"{APP}-dlq") or Topic.open(str(tmp_path), f"{APP}-dlq").read().num_rows == 0
