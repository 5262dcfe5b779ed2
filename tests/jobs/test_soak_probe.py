import json

import pytest

from deltastreams.devtools.harness.soak_probe import BatchLog, FileSizes, mean_memory, storage, topic_kind


def _file(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_storage_counts_files_and_bytes_per_kind_of_topic(tmp_path):
    topics = tmp_path / "topics"
    _file(topics / "pageview-events" / "partition=0" / "a.parquet", 100)
    _file(topics / "pageview-events" / "_delta_log" / f"{0:020}.json", 10)
    _file(topics / "pageview-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition" / "partition=1" / "b.parquet", 200)
    _file(topics / "pageview-store-changelog" / "partition=0" / "c.parquet", 300)
    _file(topics / "pageview-windowed-counts" / "partition=2" / "d.parquet", 400)
    _file(topics / "pageview-dlq" / "partition=0" / "e.parquet", 1)
    for version in range(3):
        _file(tmp_path / "transactions" / "pageview" / "subtopology-0" / "_delta_log" / f"{version:020}.json", 5)
    _file(tmp_path / "transactions" / "pageview" / "subtopology-1" / "_delta_log" / f"{0:020}.json", 5)
    _file(tmp_path / "checkpoints" / "pageview" / "subtopology-0" / "offsets" / "0", 5)
    _file(tmp_path / "state" / "pageview" / "0_0" / "store" / "000001.sst", 50)
    _file(tmp_path / "state" / "pageview" / "checkpoints" / "q" / "commits" / "0", 5)  # one query per application

    found = storage(tmp_path, tmp_path / "state", "pageview", ("pageview-events",))

    assert found["topics"]["input"] == {"files": 2, "bytes": 110, "delta_log_files": 1, "tables": 1}
    assert found["topics"]["repartition"]["bytes"] == 200
    assert found["topics"]["changelog"]["bytes"] == 300
    assert found["topics"]["sink"] == {"files": 2, "bytes": 401, "delta_log_files": 0, "tables": 2}
    assert (found["topics_files"], found["topics_bytes"]) == (6, 1011)
    assert found["transaction_logs"] == 2 and found["transaction_versions"] == 4 and found["transaction_log_files"] == 4
    assert found["checkpoint_files"] == 2
    assert (found["state_files"], found["state_bytes"]) == (1, 50)


def test_storage_from_earlier_readings_follows_added_removed_and_rewritten_files(tmp_path):
    known = FileSizes()
    events = tmp_path / "topics" / "pageview-events"
    _file(events / "partition=0" / "a.parquet", 100)
    _file(events / "_delta_log" / "_last_checkpoint", 10)

    def both():
        return storage(tmp_path, tmp_path / "state", "pageview", ("pageview-events",), known=known), storage(tmp_path, tmp_path / "state", "pageview", ("pageview-events",))

    first, fresh = both()
    assert first == fresh and first["topics"]["input"] == {"files": 2, "bytes": 110, "delta_log_files": 1, "tables": 1}
    _file(events / "partition=1" / "b.parquet", 200)  # a new directory and file
    _file(events / "_delta_log" / "_last_checkpoint", 30)  # rewritten in place
    (events / "partition=0" / "a.parquet").unlink()  # retention
    second, fresh = both()
    assert second == fresh and second["topics"]["input"] == {"files": 2, "bytes": 230, "delta_log_files": 1, "tables": 1}


def test_storage_of_an_empty_root_is_zero(tmp_path):
    found = storage(tmp_path, tmp_path / "state", "pageview", ("pageview-events",))
    assert found["topics_files"] == found["transaction_versions"] == found["checkpoint_files"] == found["state_files"] == 0


def test_topic_kinds_follow_kafka_streams_names():
    assert topic_kind("pageview-events", ("pageview-events",)) == "input"
    assert topic_kind("app-x-repartition", ()) == "repartition"
    assert topic_kind("app-x-changelog", ()) == "changelog"
    assert topic_kind("app-dlq", ()) == "sink"


def test_batch_log_returns_complete_lines_once(tmp_path):
    path = tmp_path / "metrics.jsonl"
    log = BatchLog(path)
    assert log.read_new() == []  # no file yet
    line = {"time": 1.5, "subtopology": 0, "batch_id": 0, "records_in": 10, "total_ms": 400.0}
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "batch_id": 1})[:20])  # the second is half written
    assert [b.records_in for b in log.read_new()] == [10]
    with path.open("a") as f:
        f.write(json.dumps({**line, "batch_id": 1})[20:] + "\n")
    (second,) = log.read_new()
    assert (second.time, second.subtopology, second.total_ms) == (1.5, 0, 400.0)
    assert len(log.batches) == 2 and log.read_new() == []


def test_commit_follower_keeps_appends_with_their_newest_records_age_and_skips_rewrites(tmp_path):
    import time

    import pyarrow as pa

    from deltastreams.devtools.harness.soak_probe import CommitFollower
    from deltastreams.sinks import create_topic
    from deltastreams.sinks.retention import optimize_files

    follower = CommitFollower(tmp_path, "counts", freshness=True)
    assert follower.read_new() == []  # no topic yet
    topic = create_topic(tmp_path, "counts", partitions=1, key_type=pa.string(), value_type=pa.int64())
    now = int(time.time() * 1000)
    for age_ms in (5000, 3000, 1000):
        topic.append(pa.table({"key": ["a", "b"], "value": pa.array([1, 2], pa.int64()), "timestamp": pa.array([now - 60_000, now - age_ms], pa.int64())}))
    first = follower.read_new()
    assert [c.version for c in first] == [1, 2, 3] and [c.records for c in first] == [2, 2, 2]
    # Commit time minus the newest record's timestamp: the late record (a minute old) does not count.
    assert [c.freshest_ms for c in first] == [round(c.time * 1000) - (now - age) for c, age in zip(first, (5000, 3000, 1000), strict=True)]
    assert optimize_files(topic.delta_table(), min_files=2, target_file_bytes=1 << 20).version == 4  # a rewrite, not an append
    topic.append(pa.table({"key": ["c"], "value": pa.array([3], pa.int64()), "timestamp": pa.array([now], pa.int64())}))
    assert [c.version for c in follower.read_new()] == [5] and follower.missed == 0


def _reading(driver_mb, jvm_mb, *extra):
    processes = [{"pid": 1, "role": "driver", "pss_mb": driver_mb, "rss_mb": driver_mb + 10}, {"pid": 2, "role": "jvm", "pss_mb": jvm_mb, "rss_mb": jvm_mb}, *extra]
    python = sum(p["pss_mb"] for p in extra)
    return {"driver": driver_mb, "jvm": jvm_mb, "python": python, "total": driver_mb + jvm_mb + python, "python_processes": len(extra), "processes": processes}


def test_mean_memory_averages_every_figure_over_the_readings_that_saw_it():
    # A driver that holds 60 MB more for one reading in four (a retention step's working memory):
    # the mean sees a quarter of it, whatever phase the sample lands on.
    worker = {"pid": 3, "role": "python worker", "pss_mb": 30.0, "rss_mb": 40.0}
    readings = [_reading(200.0, 500.0), _reading(260.0, 500.0, worker), _reading(200.0, 500.0), _reading(200.0, 500.0)]

    mean = mean_memory(readings)

    assert mean["driver"] == 215.0 and mean["jvm"] == 500.0 and mean["python"] == 7.5 and mean["total"] == 722.5
    assert mean["readings"] == 4 and mean["peak_total"] == 790.0
    by_pid = {p["pid"]: p for p in mean["processes"]}
    assert by_pid[1] == {"pid": 1, "role": "driver", "pss_mb": 215.0, "rss_mb": 225.0}
    assert by_pid[3]["pss_mb"] == 30.0  # its own mean over the one reading it appeared in, not diluted by absences


def test_mean_memory_of_no_readings_is_an_error():
    with pytest.raises(ValueError):
        mean_memory([])


def test_cpu_meter_names_the_process_that_took_the_cores():
    import os
    import subprocess
    import sys
    import time

    from deltastreams.devtools.harness.soak_probe import CPU_ROLES, CpuMeter
    from deltastreams.devtools.servers.process_tree import all_processes

    job = subprocess.Popen(["sleep", "60"], start_new_session=True)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        meter = CpuMeter()
        assert meter.read(job.pid, spinner.pid, all_processes(), time.time()) is None  # the first read only starts the count
        time.sleep(2.0)
        cores = meter.read(job.pid, spinner.pid, all_processes(), time.time())
    finally:
        for process in (job, spinner):
            process.kill()
            process.wait()
    assert set(cores) == {*CPU_ROLES, "idle"}
    assert 0.3 < cores["generator"] <= 1.05, cores  # one spinning thread: at most one core, most of one unless the machine is crowded
    assert cores["driver"] < 0.05 and cores["soak"] < 0.2, cores
    assert abs(sum(cores.values()) - os.cpu_count()) < 0.25 * os.cpu_count(), cores  # every core's time is somewhere
