import random
import string
from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from deltastreams.sinks._internal.delta_log import files_added, snapshot_files
from deltastreams.sinks.retention import EXPIRE_AFTER_COMMIT, OPTIMIZE_AFTER_COMMIT, OPTIMIZE_AFTER_WRITE, expire_oldest, optimize_files
from tests.sinks.retention_support import append_values, files_on_disk, read_all_versions, sink, snapshot_paths

BIG = 1 << 30


def small_files(tmp_path, batches=12):
    topic = sink(tmp_path)
    for b in range(batches):
        append_values(topic, [(f"k{b}-{i}", b * 100 + i, i % 2, 1000 * b + i) for i in range(6)])
    return topic


def per_partition(topic):
    counts = {}
    for f in snapshot_files(topic.delta_table()):
        counts[f.partition] = counts.get(f.partition, 0) + 1
    return counts


def test_optimize_merges_small_files_with_the_same_records_offsets_and_order(tmp_path):
    topic = small_files(tmp_path)
    before = topic.read()
    history = read_all_versions(topic)
    version = topic.version()
    steps = []
    result = optimize_files(topic.delta_table(), min_files=5, target_file_bytes=BIG, on_step=steps.append)
    assert steps == [OPTIMIZE_AFTER_WRITE, OPTIMIZE_AFTER_COMMIT]
    assert (result.files_removed, result.files_added) == (24, 2)
    assert result.records_before == result.records_after == 72
    assert per_partition(topic) == {0: 1, 1: 1}
    assert topic.read() == before  # partition, offset, timestamp, key, value: all equal, in order
    # Incremental readers never see the rewritten files as new records.
    assert files_added(topic.uri, version, topic.version()) == []
    assert read_all_versions(topic) == history
    assert topic.end_offsets() == {0: 36, 1: 36}


def test_optimize_holds_one_file_of_a_run_in_memory_not_the_whole_run(tmp_path):
    # A merge read every file of its run, then wrote them: the retention thread's memory rose with
    # its largest merge (up to the 64 MB target of Parquet, decoded), and allocators keep much of a freed peak.
    # Measured: 3.8 MB at its peak before (28 files' worth), 0.46 MB now (one file, the writer).
    topic = sink(tmp_path, partitions=1)
    rng = random.Random(7)
    for b in range(20):
        append_values(topic, [("".join(rng.choices(string.ascii_letters, k=100)), b * 1000 + i, 0, 1000 * b + i) for i in range(1000)])
    before = topic.read()
    file_bytes = max(topic.read_rows(f).nbytes for f in snapshot_files(topic.delta_table()))
    counted = pa.proxy_memory_pool(pa.default_memory_pool())
    default = pa.default_memory_pool()
    pa.set_memory_pool(counted)
    try:
        result = optimize_files(topic.delta_table(), min_files=5, target_file_bytes=BIG, fan_in=20)
    finally:
        pa.set_memory_pool(default)
    assert (result.files_removed, result.files_added) == (20, 1)
    assert topic.read() == before
    assert 0 < counted.max_memory() < 5 * file_bytes, f"peak {counted.max_memory():,} bytes for a run of 20 files of {file_bytes:,}"


def test_optimize_writes_files_of_about_the_target_size(tmp_path):
    topic = small_files(tmp_path)
    before = topic.read()
    size = max(f.size for f in snapshot_files(topic.delta_table()))
    optimize_files(topic.delta_table(), min_files=5, target_file_bytes=int(size * 2.5))
    assert per_partition(topic) == {0: 6, 1: 6}  # pairs of files: a third would pass the target
    assert topic.read() == before


def test_optimize_leaves_files_not_yet_consumed_and_partitions_with_few_files_alone(tmp_path):
    topic = small_files(tmp_path, batches=6)
    unread = {f.path for f in snapshot_files(topic.delta_table()) if f.partition == 0 and f.max_offset >= 9}
    optimize_files(topic.delta_table(), min_files=5, target_file_bytes=BIG, consumed={0: 9, 1: 0}, fan_in=3)
    paths = snapshot_paths(topic.uri)
    assert unread <= paths
    assert per_partition(topic) == {0: 1 + len(unread), 1: 6}
    result = optimize_files(topic.delta_table(), min_files=7, target_file_bytes=BIG)
    assert result.version is None and snapshot_paths(topic.uri) == paths


def test_optimizes_one_after_another_rewrite_a_record_once_per_size_class_not_every_time(tmp_path):
    # The job optimizes its sinks every minute. Merging every small file into the growing last one
    # rewrote the whole sink each time (the 2-hour soak of issue 42: 2.5M records a minute, and
    # growing); size classes rewrite a record about once per class.
    topic = sink(tmp_path, partitions=1)
    rng = random.Random(7)
    appends, per_append, rewritten = 48, 20, 0
    for a in range(appends):
        payload = [("".join(rng.choices(string.ascii_letters, k=500)), a * per_append + i, 0, a) for i in range(per_append)]
        append_values(topic, payload)  # ~11 KB, class 1 of fan-in 4
        result = optimize_files(topic.delta_table(), min_files=2, target_file_bytes=BIG, fan_in=4)
        rewritten += result.records_before
    total = appends * per_append
    assert rewritten <= 2 * total  # 48 appends: two classes up (a merge of all at every step: ~24x)
    assert topic.read()["value"].to_pylist() == list(range(total))  # same records, same order
    assert len(snapshot_files(topic.delta_table())) < 4 * 3  # fewer than fan-in per class


def test_an_optimize_racing_the_applications_commit_fails_cleanly(tmp_path):
    topic = small_files(tmp_path, batches=6)
    stale = topic.delta_table()
    append_values(topic, [("late", 1, 0, 1)])
    on_disk, version = files_on_disk(topic.uri), topic.version()
    result = optimize_files(stale, min_files=2, target_file_bytes=BIG, fan_in=3)
    assert result.conflict and result.version is None
    assert topic.version() == version and files_on_disk(topic.uri) == on_disk


def test_time_retention_removes_the_oldest_files_but_never_a_partitions_newest(tmp_path):
    topic = small_files(tmp_path, batches=4)  # timestamps 0-5, 1000-1005, 2000-2005, 3000-3005
    steps = []
    result = expire_oldest(
        topic.delta_table(), retention=timedelta(milliseconds=1500), retention_bytes=None, now_ms=3500, on_step=steps.append
    )
    assert steps == [EXPIRE_AFTER_COMMIT]
    assert result.files_removed == 4  # the files of the first two batches: all records before 2000
    left = topic.read()
    assert pc.min(left["timestamp"]).as_py() == 2000
    assert left.filter(pc.equal(left["partition"], 0))["offset"].to_pylist() == [6, 7, 8, 9, 10, 11]
    expire_oldest(topic.delta_table(), retention=timedelta(milliseconds=1), retention_bytes=None, now_ms=10_000)
    assert per_partition(topic) == {0: 1, 1: 1}
    assert topic.end_offsets() == {0: 12, 1: 12}


def test_size_retention_keeps_at_least_the_bound_per_partition(tmp_path):
    topic = small_files(tmp_path, batches=5)
    size = max(f.size for f in snapshot_files(topic.delta_table()))
    expire_oldest(topic.delta_table(), retention=None, retention_bytes=2 * size, now_ms=0)
    for partition in (0, 1):
        kept = [f for f in snapshot_files(topic.delta_table()) if f.partition == partition]
        assert len(kept) <= 3 and sum(f.size for f in kept) >= 2 * size  # Kafka's rule: at least the bound stays
        assert max(f.max_offset for f in kept) == 14
    assert expire_oldest(topic.delta_table(), retention=None, retention_bytes=None).version is None
    assert DeltaTable(topic.uri).version() == 6
