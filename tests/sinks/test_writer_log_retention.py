"""What Topic.append keeps bounded as it goes (issue 42): the log, by the topic's
delta.logRetentionDuration (commit files older than it deleted at a checkpoint, up to one), and
the files, by merging small ones; a reader behind gets a clear error, never a wrong answer."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from deltastreams.conf.errors import LogRetentionError
from deltastreams.conf.retention import RetentionConfig
from deltastreams.sinks import Topic, create_topic, files_added, read_commit
from deltastreams.sinks._internal import small_files
from deltastreams.sinks._internal.files import DataFile
from deltastreams.sinks._internal.log_expiry import parse_interval
from deltastreams.sinks._internal.small_files import runs_to_merge
from deltastreams.streams._internal.runtime.inputs import InputLog


def rows(start: int, n: int = 2, partition: int | None = None) -> pa.Table:
    columns = {"key": [f"k{i}" for i in range(start, start + n)], "value": pa.array(range(start, start + n), pa.int64()), "timestamp": pa.array([0] * n, pa.int64())}
    if partition is not None:
        columns["partition"] = pa.array([partition] * n, pa.int32())
    return pa.table(columns)


def log_dir(topic: Topic) -> Path:
    return Path(topic.uri) / "_delta_log"


def commits(topic: Topic) -> list[int]:
    return sorted(int(p.name[:20]) for p in log_dir(topic).glob("*.json"))


def age_commits(topic: Topic, before: int, hours: float) -> None:
    """Make the commit files of versions below ``before`` look ``hours`` old (Delta judges a
    commit's age by its file's modification time)."""
    then = time.time() - hours * 3600
    for path in log_dir(topic).glob("*.json"):
        if int(path.name[:20]) < before:
            os.utime(path, (then, then))


@pytest.fixture
def topic(tmp_path) -> Topic:
    return create_topic(tmp_path, "events", partitions=2, key_type=pa.string(), value_type=pa.int64(), log_retention=timedelta(hours=1), checkpoint_interval=5)


def append(topic: Topic, count: int, start: int = 0) -> int:
    for i in range(count):
        topic.append(rows(start + 2 * i))
    return start + 2 * count


def test_the_log_keeps_commits_younger_than_the_retention_and_cuts_at_a_checkpoint(topic, tmp_path):
    assert topic.delta_table().metadata().configuration["delta.logRetentionDuration"] == "interval 3600000 milliseconds"
    written = append(topic, 22)
    assert commits(topic) == list(range(23)) and topic.version() == 22  # all younger than an hour: all kept
    age_commits(topic, before=13, hours=2)
    append(topic, 3, written)  # version 25 is due: a checkpoint, then the cleanup
    # Commits 0-12 are expired; the newest checkpoint whose previous commit is expired is 10.
    assert commits(topic)[0] == 10 and sorted(int(p.name[:20]) for p in log_dir(topic).glob("*.checkpoint.parquet")) == [10, 15, 20, 25]
    reopened = Topic.open(tmp_path, "events").read()
    assert sorted(reopened["value"].to_pylist()) == list(range(50))  # the state is whole
    assert len(files_added(topic.uri, 9, topic.version())) > 0  # readable from the oldest kept version on
    with pytest.raises(LogRetentionError, match=r"version 9 of .* is gone: log retention deleted it \(the log now holds versions 10 to 25") as behind:
        files_added(topic.uri, 8, topic.version())
    assert behind.value.oldest == 10


def test_an_application_behind_its_input_log_stops_saying_how_to_go_on(topic):
    append(topic, 12)
    age_commits(topic, before=12, hours=2)
    append(topic, 3, 24)  # version 15: cut at 10
    inputs = InputLog({"pageviews": topic.uri}, max_records=1000)
    with pytest.raises(LogRetentionError) as behind:
        inputs.bounded("pageviews", 3, topic.version())
    message = str(behind.value)
    assert "input topic 'pageviews': this application consumed it up to version 3, but the topic's log now starts at version 10" in message
    assert "--to-version pageviews=9" in message and "delta.logRetentionDuration" in message
    taken = inputs.bounded("pageviews", 9, topic.version())  # after such a reset it reads on
    assert taken.end == topic.version() and sum(f.num_records for f in taken.files) == 2 * 6


def test_small_files_are_merged_size_tiered_and_readers_see_each_record_once(topic, tmp_path, monkeypatch):
    monkeypatch.setattr(small_files, "MIN_FILES", 6)
    monkeypatch.setattr(small_files, "FAN_IN", 3)
    for i in range(60):
        topic.append(rows(2 * i, partition=0))
    table = topic.delta_table()
    live = table.get_add_actions(flatten=True).num_rows
    assert live < 15  # 60 appends, one file each
    history = [h["operation"] for h in table.history()]
    assert "OPTIMIZE" in history
    records = Topic.open(tmp_path, "events").read()
    assert records["value"].to_pylist() == list(range(120)) and records["offset"].to_pylist() == list(range(120))
    incremental = topic.read(after_version=0, up_to_version=topic.version())  # version by version: rewrites are not data
    assert incremental["value"].to_pylist() == list(range(120))
    on_disk = len(list((Path(topic.uri) / "partition=0").iterdir()))
    assert on_disk > live  # replaced files stay while versions that add them are in the log


def test_replaced_files_go_with_the_last_commit_that_needs_them(topic, monkeypatch):
    monkeypatch.setattr(small_files, "MIN_FILES", 6)
    monkeypatch.setattr(small_files, "FAN_IN", 3)
    for i in range(30):
        topic.append(rows(2 * i, partition=0))
    partition = Path(topic.uri) / "partition=0"
    before = len(list(partition.iterdir()))
    assert before > topic.delta_table().get_add_actions().num_rows  # replaced files wait
    age_commits(topic, before=topic.version(), hours=2)
    for i in range(30, 36):
        topic.append(rows(2 * i, partition=0))
    live = {p.split("/")[-1] for p in topic.delta_table().get_add_actions(flatten=True).column("path").to_pylist()}
    kept = commits(topic)[0]
    needed = set(live) | {Path(f.path).name for f in files_added(topic.uri, kept - 1, topic.version())}
    on_disk = {p.name for p in partition.iterdir()}
    assert needed <= on_disk  # what a reader can still ask for is there
    removed_since = {Path(a["remove"]["path"]).name for v in range(kept, topic.version() + 1) for a in read_commit(topic.uri, v) if "remove" in a}
    assert on_disk - needed <= removed_since  # and besides, only files whose removal the log still holds
    assert len(on_disk) < before  # the others (replaced before the oldest kept version) are gone


def test_runs_of_one_size_class_merge_and_the_rest_wait():
    def files(*sizes, start=0):
        return [DataFile(f"f{start + i}", 0, 1, start + i, start + i, size=s) for i, s in enumerate(sizes)]

    small = files(*[5_000] * 12)
    assert runs_to_merge(small, fan_in=10, target_file_bytes=64 << 20) == [small]
    assert runs_to_merge(small[:9], fan_in=10, target_file_bytes=64 << 20) == []  # too few of one class yet
    mixed = files(500_000, *[50_000] * 9, *[5_000] * 10)
    assert runs_to_merge(mixed, fan_in=10, target_file_bytes=64 << 20) == [mixed[10:]]  # the 9 middle ones wait for a tenth
    unordered = files(5_000, 5_000, 5_000) + [DataFile("foreign", 0, 1, -1, -1, size=5_000)] + files(5_000, 5_000, 5_000, start=10)
    assert runs_to_merge(unordered, fan_in=3, target_file_bytes=64 << 20) == [unordered[:3], unordered[4:]]  # never across a file without offsets
    straggler = files(*[50_000] * 5, 5_000, *[50_000] * 5)
    assert runs_to_merge(straggler, fan_in=10, target_file_bytes=64 << 20) == [straggler]  # a smaller file between them goes along
    capped = files(*[400] * 10)
    assert [len(g) for g in runs_to_merge(capped, fan_in=10, target_file_bytes=1_000)] == [2, 2, 2, 2, 2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("interval 30 days", timedelta(days=30)),
        ("interval 1 hour 30 minutes", timedelta(minutes=90)),
        ("INTERVAL 600000 MILLISECONDS", timedelta(minutes=10)),
        ("interval 1 week", timedelta(days=7)),
    ],
)
def test_delta_interval_texts_parse(text, expected):
    assert parse_interval(text) == expected


def test_an_unknown_interval_unit_is_refused():
    with pytest.raises(ValueError, match="unknown unit 'fortnight'"):
        parse_interval("interval 2 fortnights")


def test_a_topic_without_the_property_keeps_deltas_30_days(tmp_path):
    topic = create_topic(tmp_path, "plain", partitions=1, key_type=pa.string(), value_type=pa.int64(), log_retention=None, checkpoint_interval=5)
    for i in range(6):
        topic.append(rows(2 * i))
    age_commits(topic, before=6, hours=24 * 29)
    for i in range(6, 12):
        topic.append(rows(2 * i))
    assert commits(topic)[0] == 0  # 29 days old is not expired under Delta's default


def checkpoint_removes(topic: Topic) -> int:
    """Remove actions (tombstones) in the topic's newest checkpoint."""
    import pyarrow.parquet as pq

    newest = max(log_dir(topic).glob("*.checkpoint.parquet"))
    return pq.read_table(newest, columns=["remove"]).column("remove").drop_null().__len__()


def test_checkpoints_forget_removed_files_after_the_topics_removed_file_retention(tmp_path, monkeypatch):
    # The writer's merges remove every small file it appended; with Delta's default of a week
    # each removal stayed in every checkpoint (the 2-hour soak's input topic: 79,000 of them at
    # version 39,600, 6.7 MB, loaded by every checkpointing append). Topics deltastreams creates
    # keep them DEFAULT_REMOVED_FILE_RETENTION; the writer deletes the files from the commits it expires.
    from deltastreams.sinks.topics import DEFAULT_REMOVED_FILE_RETENTION

    monkeypatch.setattr(small_files, "MIN_FILES", 6)
    monkeypatch.setattr(small_files, "FAN_IN", 3)
    short = create_topic(tmp_path, "short", partitions=1, key_type=pa.string(), value_type=pa.int64(), checkpoint_interval=5, removed_file_retention=timedelta(seconds=1))
    week = create_topic(tmp_path, "week", partitions=1, key_type=pa.string(), value_type=pa.int64(), checkpoint_interval=5, removed_file_retention=None)
    for topic in (short, week):
        for i in range(40):
            topic.append(rows(2 * i, partition=0))
    time.sleep(1.5)
    for topic in (short, week):
        for i in range(40, 45):  # the next checkpoint
            topic.append(rows(2 * i, partition=0))
    assert checkpoint_removes(week) > 20  # every merged file, kept a week
    assert checkpoint_removes(short) < 5  # only those removed in the last second
    assert short.read()["value"].to_pylist() == list(range(90))
    default = create_topic(tmp_path, "default", partitions=1, key_type=pa.string(), value_type=pa.int64())
    assert default.delta_table().metadata().configuration["delta.deletedFileRetentionDuration"] == "interval 1200000 milliseconds"
    assert DEFAULT_REMOVED_FILE_RETENTION == 2 * RetentionConfig().removed_file_delay  # what an application's retention sets on its own topics
