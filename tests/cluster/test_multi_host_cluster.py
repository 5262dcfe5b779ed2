"""The cluster recipe on several hosts (deltastreams.devtools.servers.netns_cluster): a master, three worker hosts, a driver
host and the object store, each in a network namespace of its own with its own address and
TMPDIR. The pageview job, spark-submitted from the driver host with an s3:// root, must run on
executors of at least two worker hosts, keep each task's state on the disk of the host that ran
it, and give the counts of an independent computation; killing a host must leave none of its
processes and the others running. Skipped, with the reason, where namespaces cannot be created."""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from chispa import assert_df_equality

import deltastreams.jobs.pageview
from deltastreams.devtools.harness.pageview_reference import final_counts, source_events
from deltastreams.devtools.servers.standalone_cluster import spark_home
from deltastreams.devtools.servers.netns_cluster import MultiHostCluster, netns_pids

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WINDOW_MS, GRACE_MS = 5000, 5000


@pytest.fixture(scope="module")
def pageview_run(cluster, tmp_path_factory):
    """The job, generated and submitted from the driver host with its options on the command line
    (no host has them in its environment); what it printed and where."""
    work = tmp_path_factory.mktemp("driver-run")
    root = cluster.uri(f"pageviews-{cluster.cluster_id}")  # its default state path is unique too
    options = [arg for name, value in cluster.storage_options.items() for arg in ("--set", f"storage_options.{name}={value}")]
    python = cluster.python
    generate = cluster.run_on_driver(
        [python, "-m", "deltastreams.jobs.pageview", "generate", "--root", root, "--events", "6000", "--seed", "11",
         "--late-fraction", "0.1", "--max-lateness-ms", "20000", *options],
        capture_output=True, text=True, cwd=work, timeout=300,
    )  # fmt: skip
    assert generate.returncode == 0, generate.stderr[-3000:]
    submit = [
        str(Path(spark_home()) / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--executor-memory", "1g",
        # two one-core executors: the master spreads them over two worker hosts (a third JVM
        # would only slow this two-core machine down)
        "--total-executor-cores", "2",
        "--conf", "spark.sql.shuffle.partitions=3",
        deltastreams.jobs.pageview.__file__, "run", "--root", root, "--until-caught-up",
        "--window-ms", str(WINDOW_MS), "--grace-ms", str(GRACE_MS), "--commit-interval-ms", "200",
        # a Spark stage per sub-topology and a Spark task per deltastreams task, so the work is spread
        "--set", "single_task_records=0", *options,
        "--log-file", str(work / "driver.log"),
    ]  # fmt: skip
    run = cluster.run_on_driver(submit, capture_output=True, text=True, cwd=work, timeout=600)
    driver_output = run.stdout + run.stderr + ((work / "driver.log").read_text(errors="replace") if (work / "driver.log").exists() else "")
    assert run.returncode == 0, driver_output[-4000:]
    results = cluster.run_on_driver([python, "-m", "deltastreams.jobs.pageview", "results", "--root", root, *options], capture_output=True, text=True, timeout=300)
    assert results.returncode == 0, results.stderr[-3000:]
    return {"root": root, "work": work, "driver_output": driver_output, "results": results.stdout}


def test_pageview_counts_from_the_cluster_equal_an_independent_computation(spark, cluster, pageview_run):
    from deltastreams.sinks import use_storage_options

    lines = pageview_run["results"].splitlines()
    assert lines[0] == "category,window_start,window_end,count"
    got = pd.DataFrame([line.split(",") for line in lines[1:]], columns=lines[0].split(","))
    use_storage_options(cluster.storage_options)  # this process reaches the store over the bridge
    try:
        expected = final_counts(source_events(pageview_run["root"]), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    finally:
        use_storage_options(None)
    assert len(expected) > 20
    assert_df_equality(as_spark(spark, got), as_spark(spark, expected), ignore_row_order=True)


def test_executors_ran_the_tasks_on_at_least_two_worker_hosts(cluster, pageview_run):
    master_log = cluster.master_log.read_text(errors="replace")
    launched = re.findall(r"Launching executor (app-\S+) on worker worker-\d+-([\d.]+)-\d+", master_log)
    worker_addresses = {host.address for host in cluster.worker_hosts}
    assert {address for _, address in launched} <= worker_addresses, master_log[-3000:]
    # ... and did the work there: an executor log with tasks on >= 2 hosts, none in the driver
    ran_tasks = {host.address for host in cluster.worker_hosts for log in Path(host.work_dir).glob("app-*/*/stderr") if "Running task" in log.read_text(errors="replace")}
    assert len(ran_tasks) >= 2, (ran_tasks, master_log[-3000:])
    assert "Starting executor ID driver" not in pageview_run["driver_output"]


def task_stores(tmpdir: str, root: str) -> set[str]:
    """The pageview job's task directories (``<state_dir>/<application id>/<task id>``) under a
    host's TMPDIR, where the default state_dir of an s3:// root lies."""
    bucket_and_prefix = root.split("://", 1)[1]
    tasks = Path(tmpdir) / "deltastreams" / "s3" / bucket_and_prefix / "state" / deltastreams.jobs.pageview.APPLICATION_ID
    return {path.name for path in tasks.glob("*_*") if path.is_dir()} if tasks.is_dir() else set()


def test_each_worker_host_keeps_the_stores_of_its_tasks_under_its_own_tmpdir(cluster, pageview_run):
    root = pageview_run["root"]
    assert task_stores(cluster.hosts["driver"].tmpdir, root) == set(), "stores under the driver host's TMPDIR"
    assert task_stores(tempfile.gettempdir(), root) == set(), "stores under this machine's own TMPDIR"
    holding = {host.name: task_stores(host.tmpdir, root) for host in cluster.worker_hosts}
    ran_tasks = {host.name for host in cluster.worker_hosts for log in Path(host.work_dir).glob("app-*/*/stderr") if "Running task" in log.read_text(errors="replace")}
    # every stateful task (the count's, one per repartition partition) has its store on a worker
    # host, and only hosts whose executors ran tasks hold any
    assert {"1_0", "1_1", "1_2"} <= set().union(*holding.values()), holding
    assert {name for name, tasks in holding.items() if tasks} <= ran_tasks, (holding, ran_tasks)


def test_kill_host_leaves_none_of_its_processes_and_the_others_go_on(cluster):
    victim, others = cluster.worker(3), [cluster.worker(1), cluster.worker(2)]
    before = {host.name: netns_pids(host.namespace) for host in others}
    assert netns_pids(victim.namespace) and all(before.values())
    # from another process, as a developer would: the state file under the cluster's directory
    kill = subprocess.run([cluster.python, "-m", "deltastreams.devtools.servers.netns_cluster", "kill-host", "3", "--dir", str(cluster.directory)], capture_output=True, text=True, timeout=60)
    assert kill.returncode == 0 and "worker-3: killed" in kill.stdout, kill.stdout + kill.stderr
    assert netns_pids(victim.namespace) == []
    # the other hosts' processes (their workers) are the same ones, and the master still answers
    assert {host.name: set(before[host.name]) <= set(netns_pids(host.namespace)) for host in others} == {host.name: True for host in others}
    deadline, view = time.monotonic() + 30, None
    while time.monotonic() < deadline:  # the master sees the closed connection, not a 60 s timeout
        view = cluster.master_workers()
        if view and view.get(victim.address) == "DEAD":
            break
        time.sleep(0.5)
    assert view == {victim.address: "DEAD", **{host.address: "ALIVE" for host in others}}, view


def test_two_clusters_get_names_of_their_own_that_linux_accepts(tmp_path):
    plans = []
    for name in ("a", "b"):
        cluster = MultiHostCluster(tmp_path / name, workers=3)
        cluster._plan()  # names and addresses only: nothing is created
        plans.append(cluster)
    first, second = plans
    names = lambda c: {c.bridge} | {h.veth for h in c.hosts.values()} | {h.namespace for h in c.hosts.values()}  # noqa: E731
    assert names(first).isdisjoint(names(second))
    assert all(len(interface) <= 15 for c in plans for interface in [c.bridge, *(h.veth for h in c.hosts.values())])
    assert len({h.address for h in first.hosts.values()}) == len(first.hosts) == 6


def as_spark(spark, frame: pd.DataFrame):
    return spark.createDataFrame(frame.astype({"window_start": "int64", "window_end": "int64", "count": "int64"}))
