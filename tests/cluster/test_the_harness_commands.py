"""The multi-host cluster's commands, on the package's cluster (bringing up another costs a minute):
``servers.netns_cluster status`` reports every host and the master's workers, and
``harness.cluster --cluster DIR`` runs its trials there and prints its verdict. (This module runs
after the others of the package: its trial may lose a worker host, which the harness starts again.)"""

from __future__ import annotations

import json
import re

import pytest

from tests.devtools.test_bench_commands import command

pytestmark = [pytest.mark.slow]


def test_netns_cluster_status_lists_the_hosts_and_the_master_s_workers(cluster):
    for n in range(1, cluster.workers + 1):
        cluster.ensure_worker(n)  # an earlier test of the package may have lost one
    status = json.loads(command("deltastreams.devtools.servers.netns_cluster", "status", "--dir", str(cluster.directory)))
    assert status["master"] == cluster.master_url and status["id"] == cluster.cluster_id
    workers = [f"worker-{n}" for n in range(1, cluster.workers + 1)]
    assert set(status["hosts"]) == {"s3", "master", "driver", *workers}, status
    for name in ("s3", "master", *workers):
        assert status["hosts"][name]["link"] == "up" and status["hosts"][name]["processes"] > 0, (name, status)
    assert sorted(status["workers"].values()) == ["ALIVE"] * cluster.workers, status


def test_cluster_harness_runs_a_trial_on_the_cluster_and_reports_no_violation(cluster, tmp_path):
    out = command(
        "deltastreams.devtools.harness.cluster", "--root", str(tmp_path / "h"), "--cluster", str(cluster.directory), "--trials", "1",
        "--events", "1500", "--max-records-per-batch", "500", "--seed", "2",
    )
    assert re.search(r"storage s3 \(SeaweedFS\), multi-host cluster: 1 trials in \d+ s", out), out
    assert int(re.search(r"windows checked: (\d+), wrong: 0\b", out).group(1)) > 0, out
    assert re.search(r"^\s+violations: 0$", out, re.M), out
    for n in range(1, cluster.workers + 1):
        assert cluster.ensure_worker(n) is False, f"worker {n} was not started again after the trial"
