"""Tasks stay with their stores on a cluster of several hosts, and survive losing one
(deltastreams.devtools.bench.cluster_locality on the multi-host test cluster).

A count per user (one store entry per user) runs over three worker hosts, one batch per append.
Once every task has run (the warm-up), no batch may read a changelog back: each task runs where
its stores are current. Then every process of one worker host is killed mid-run: its tasks must
move to the other hosts, catch up from their changelogs and commit, and every user's final count
must equal the number of that user's events (read with delta-rs alone): exactly once."""

from __future__ import annotations

import argparse

import pytest

from deltastreams.devtools.bench import cluster_locality

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WARM_UP, KILL_AFTER = 2, 4


def test_tasks_stay_with_their_stores_and_a_lost_hosts_tasks_move_and_count_exactly_once(cluster, tmp_path):
    args = argparse.Namespace(
        events=48_000, appends=8, users=20_000, partitions=6, sticky="on", standbys=0, warm_up=WARM_UP, kill_host=3, kill_after_batch=KILL_AFTER
    )
    for n in range(1, cluster.workers + 1):
        cluster.ensure_worker(n)  # an earlier test of the package may have killed one
    report = cluster_locality.run(cluster, args, tmp_path)

    assert report["users_counted_wrong"] == 0, report
    assert len(report["executors"]) == 3, report  # every worker host ran tasks
    restored = report["restored_per_batch"]
    assert restored[WARM_UP:KILL_AFTER] == [0] * (KILL_AFTER - WARM_UP), report
    moved = report["failover"]
    lost = cluster.worker(3).address
    assert moved, f"no task ran on the lost host {lost}: {report}"
    for task, how in moved.items():
        assert how["to"] is not None and f"_{lost}_" not in how["to"], (task, report)
        if task.startswith("1_"):  # the counting tasks hold state: they read it back elsewhere
            assert how["restored_entries"] > 0, (task, report)
    # Moved once, the tasks stay put again: the last batches read nothing back.
    assert restored[-1] == 0, report
