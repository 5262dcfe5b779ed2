import random
from datetime import timedelta

import pytest
from deltalake import DeltaTable

from deltastreams.sinks import Topic
from deltastreams.sinks.retention import (
    COMPACT_AFTER_COMMIT,
    COMPACT_AFTER_WATERMARK,
    COMPACT_AFTER_WRITE,
    changelog_watermarks,
    clean_log,
    compact_changelog,
)
from deltastreams.devtools.harness.checks import changelog_entries as entries
from deltastreams.devtools.harness.checks import replay as apply
from tests.sinks.retention_support import append_changes, changelog, files_on_disk, read_all_versions, snapshot_paths

DAY = timedelta(days=1)


def three_batches(tmp_path):
    topic = changelog(tmp_path)
    for batch in (
        [(b"a", b"1", 0, 0), (b"b", b"1", 0, 0), (b"c", b"1", 1, 0)],
        [(b"a", b"2", 0, 0), (b"c", None, 1, 0)],
        [(b"b", None, 0, 0), (b"a", b"3", 0, 0), (b"d", b"1", 1, 0)],
        [(b"e", b"1", 0, 0), (b"d", b"2", 1, 0)],
    ):
        append_changes(topic, batch)
    return topic


def test_compaction_keeps_the_last_record_per_key_and_replays_to_the_same_store(tmp_path):
    topic = three_batches(tmp_path)
    full = {p: entries(topic.read(), p) for p in (0, 1)}
    version = topic.version()
    result = compact_changelog(topic.delta_table(), min_files=2, tombstone_retention=DAY)
    # Partition 0 had a1 b1 | a2 | b- a3 | e1: the first three files (not the newest) become b- a3.
    # Partition 1 had c1 | c- | d1 | d2: c- (the tombstone stays: retention is a day; d2 supersedes d1).
    assert (result.records_before, result.records_after) == (8, 3)
    assert (result.files_removed, result.files_added) == (6, 2)
    compacted = Topic.open(tmp_path, "app-store-changelog")
    assert entries(compacted.read(), 0) == [(b"b", None, 3), (b"a", b"3", 4), (b"e", b"1", 5)]
    assert entries(compacted.read(), 1) == [(b"c", None, 1), (b"d", b"2", 3)]
    for p in (0, 1):
        log = entries(compacted.read(), p)
        for start in range(len(full[p]) + 1):  # a store that applied the full log up to `start`
            assert apply(apply({}, full[p], end=start), log, start) == apply({}, full[p])
    # Readers of new versions see no new records: compaction is not data; end offsets stay.
    assert compacted.read(after_version=version).num_rows == 0
    assert DeltaTable(compacted.uri).version() == version + 1 == result.version
    assert compacted.end_offsets() == {0: 6, 1: 4}
    assert result.watermarks == {} and changelog_watermarks(compacted.delta_table()) == {}


def test_the_newest_file_of_a_partition_is_never_rewritten(tmp_path):
    topic = three_batches(tmp_path)
    newest = {p: max((f for f in topic.files() if f.partition == p), key=lambda f: f.max_offset).path for p in (0, 1)}
    compact_changelog(topic.delta_table(), min_files=2, tombstone_retention=timedelta(0))
    assert set(newest.values()) <= snapshot_paths(topic.uri)


def test_a_partition_with_fewer_files_than_the_minimum_is_left_alone(tmp_path):
    topic = three_batches(tmp_path)
    result = compact_changelog(topic.delta_table(), min_files=5, tombstone_retention=timedelta(0))
    assert result.version is None and result.files_removed == 0
    assert topic.version() == 4


def test_dropping_old_tombstones_raises_the_watermark_first(tmp_path):
    topic = three_batches(tmp_path)
    table = topic.delta_table()
    steps = []
    result = compact_changelog(table, min_files=2, tombstone_retention=timedelta(0), on_step=steps.append)
    assert steps == [COMPACT_AFTER_WRITE, COMPACT_AFTER_WATERMARK, COMPACT_AFTER_COMMIT]
    # Partition 0: b's tombstone at offset 3 is dropped; partition 1: c's at offset 1.
    assert result.watermarks == {0: 4, 1: 2}
    assert entries(topic.read(), 0) == [(b"a", b"3", 4), (b"e", b"1", 5)]
    assert result.version == 6  # the watermark (version 5), then the rewrite
    fresh = DeltaTable(topic.uri)
    assert changelog_watermarks(fresh) == {0: 4, 1: 2}
    assert Topic.open(tmp_path, "app-store-changelog").layout == topic.layout  # the description survives


def test_the_watermark_survives_checkpoints_and_log_cleanup(tmp_path):
    topic = three_batches(tmp_path)
    table = topic.delta_table()
    compact_changelog(table, min_files=2, tombstone_retention=timedelta(0))
    for i in range(3):
        append_changes(topic, [(b"x", b"%d" % i, 0, 0)])
    table.update_incremental()
    table.create_checkpoint()
    append_changes(topic, [(b"y", b"1", 1, 0)])
    table.update_incremental()
    assert clean_log(table, keep_versions=1).files_deleted == 9  # commit files 0-8, before the checkpoint at 9
    assert not (tmp_path / "topics/app-store-changelog/_delta_log/00000000000000000005.json").exists()  # the watermark's commit
    assert changelog_watermarks(DeltaTable(topic.uri)) == {0: 4, 1: 2}


def test_a_compaction_racing_the_applications_commit_fails_cleanly(tmp_path):
    topic = three_batches(tmp_path)
    stale = topic.delta_table()
    append_changes(topic, [(b"z", b"1", 0, 0)])  # the application commits in between
    before_files, before_version = files_on_disk(topic.uri), topic.version()
    for retention in (DAY, timedelta(0)):  # without and with a watermark commit
        result = compact_changelog(stale, min_files=2, tombstone_retention=retention)
        assert result.conflict and result.version is None
        assert topic.version() == before_version
        assert files_on_disk(topic.uri) == before_files  # what it wrote is gone again
    assert changelog_watermarks(DeltaTable(topic.uri)) == {}


def dropped_tombstones(before, after):
    """Offsets of tombstones that were their key's last record before a compaction and are gone after it."""
    last = {}
    for key, value, offset in before:
        last[key] = (value, offset)
    kept = {offset for _, _, offset in after}
    return [offset for value, offset in last.values() if value is None and offset not in kept]


@pytest.mark.parametrize("retention", [timedelta(0), timedelta(milliseconds=30), DAY], ids=["0ms", "30ms", "1d"])
@pytest.mark.parametrize("seed", range(3))
def test_replaying_the_compacted_log_from_any_offset_gives_the_same_store(tmp_path, seed, retention):
    rng = random.Random(seed)
    topic = changelog(tmp_path, partitions=2)
    keys = [b"k%d" % i for i in range(rng.randint(2, 8))]
    clock = 0
    watermarks = {0: 0, 1: 0}
    for _ in range(rng.randint(8, 16)):
        batch = []
        for _ in range(rng.randint(1, 6)):
            clock += rng.randint(0, 10)
            value = None if rng.random() < 0.3 else b"v%d" % rng.randint(0, 99)
            batch.append((rng.choice(keys), value, rng.randint(0, 1), clock))
        append_changes(topic, batch)
        history = read_all_versions(topic)  # the original records: compaction removes files, never deletes them
        full = {p: entries(history, p) for p in (0, 1)}
        if rng.random() < 0.5:
            before = {p: entries(topic.read(), p) for p in (0, 1)}
            result = compact_changelog(topic.delta_table(), min_files=rng.randint(2, 4), tombstone_retention=retention)
            after = {p: entries(topic.read(), p) for p in (0, 1)}
            for p in (0, 1):
                dropped = dropped_tombstones(before[p], after[p])
                expected = max(watermarks[p], max(dropped) + 1) if dropped else watermarks[p]
                assert result.watermarks.get(p, 0) == expected  # rises only when tombstones are dropped
                watermarks[p] = expected
                assert {o for _, _, o in after[p]} <= {o for _, _, o in before[p]}
        committed = {p: entries(topic.read(), p) for p in (0, 1)}
        for p in (0, 1):
            everything = apply({}, full[p])
            end = full[p][-1][2] + 1 if full[p] else 0
            assert (committed[p][-1][2] + 1 if committed[p] else 0) == end  # the end offset survives
            for start in range(end + 1):
                if start >= watermarks[p]:
                    assert apply(apply({}, full[p], end=start), committed[p], start) == everything, (p, start)
            assert apply({}, committed[p]) == everything  # a rebuild from offset 0
    if retention == DAY:
        assert watermarks == {0: 0, 1: 0}
    if retention == timedelta(0):
        assert max(watermarks.values()) > 0  # the run did drop tombstones


def test_a_compaction_prepared_from_a_snapshot_commits_after_the_application_appended(tmp_path):
    # The application's retention writes the compacted files outside its commit lock, from a
    # snapshot, and commits them after the application's own appends: the appends stay, the
    # replay equals the full log's.
    from deltastreams.sinks.retention import commit_rewrite, prepare_compaction

    topic = three_batches(tmp_path)
    snapshot = DeltaTable(topic.uri, version=topic.version())
    prepared = prepare_compaction(snapshot, min_files=2, tombstone_retention=DAY)
    append_changes(topic, [(b"a", b"4", 0, 0), (b"f", b"1", 1, 0)])  # while the files were written
    full = {p: entries(topic.read(), p) for p in (0, 1)}
    result = commit_rewrite(topic.delta_table(), prepared)
    assert result.version == topic.version() and (result.files_removed, result.files_added) == (6, 2)
    compacted = Topic.open(tmp_path, "app-store-changelog")
    assert entries(compacted.read(), 0) == [(b"b", None, 3), (b"a", b"3", 4), (b"e", b"1", 5), (b"a", b"4", 6)]
    assert entries(compacted.read(), 1) == [(b"c", None, 1), (b"d", b"2", 3), (b"f", b"1", 4)]
    for p in (0, 1):
        assert apply({}, entries(compacted.read(), p)) == apply({}, full[p])


def test_a_prepared_compaction_whose_files_are_gone_commits_nothing_and_deletes_its_own(tmp_path):
    from deltastreams.sinks.retention import commit_rewrite, prepare_compaction

    topic = three_batches(tmp_path)
    first = prepare_compaction(DeltaTable(topic.uri), min_files=2, tombstone_retention=DAY)
    second = prepare_compaction(DeltaTable(topic.uri), min_files=2, tombstone_retention=DAY)
    assert commit_rewrite(topic.delta_table(), first).version is not None
    version = topic.version()
    late = commit_rewrite(topic.delta_table(), second)
    assert late.conflict and late.version is None and topic.version() == version
    assert not any(f.path in files_on_disk(topic.uri) for f in second.written.values())
    assert snapshot_paths(topic.uri) <= files_on_disk(topic.uri)
