"""The cluster recipe of docs/cluster.md, as run: a real standalone cluster (a master and two one-core
workers, each its own JVM, on loopback) and an s3:// root on a real S3-compatible store. The job
must run on the workers' executors, not silently in local mode, reach the store with the storage
options given on the command line (driver and executors alike), keep its state on local disk,
and give the counts of an independent computation."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from chispa import assert_df_equality

import deltastreams.jobs.pageview
from deltastreams.conf import StreamsConfig, storage
from deltastreams.devtools.harness.pageview_reference import final_counts, source_events
from deltastreams.devtools.servers.standalone_cluster import StandaloneCluster, cluster_environment, spark_home

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WINDOW_MS, GRACE_MS = 5000, 5000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2, worker_memory="1500m") as running:
        yield running


def test_spark_submit_runs_the_pageview_job_on_the_workers_with_an_s3_root(spark, cluster, s3_server, s3_root, tmp_path):
    # The options on the command lines below are the only way to the store.
    environment = {k: v for k, v in cluster_environment(sys.executable).items() if k not in storage.ENVIRONMENT}
    options = [arg for name, value in s3_server.storage_options.items() for arg in ("--set", f"storage_options.{name}={value}")]
    generate = subprocess.run(
        [sys.executable, "-m", "deltastreams.jobs.pageview", "generate", "--root", s3_root, "--events", "20000", "--seed", "11",
         "--late-fraction", "0.1", "--max-lateness-ms", "20000", "--batches", "3", *options],
        capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert generate.returncode == 0, generate.stderr[-3000:]
    submit = [
        str(Path(spark_home()) / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--executor-memory", "1g",
        "--conf", "spark.sql.shuffle.partitions=3",
        deltastreams.jobs.pageview.__file__, "run", "--root", s3_root, "--until-caught-up",
        "--window-ms", str(WINDOW_MS), "--grace-ms", str(GRACE_MS), "--commit-interval-ms", "200",
        "--max-records-per-batch", "8000",
        # a Spark stage per sub-topology and a Spark task per deltastreams task, so the work is spread
        "--set", "single_task_records=0", *options,
        "--log-file", str(tmp_path / "driver.log"),
    ]  # fmt: skip
    run = subprocess.run(submit, capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=600)
    driver_output = run.stdout + run.stderr + (tmp_path / "driver.log").read_text(errors="replace")
    assert run.returncode == 0, driver_output[-4000:]

    # The master launched an executor of this application on each worker ...
    master_log = cluster.master_log.read_text(errors="replace")
    launched = re.findall(r"Launching executor (app-\S+) on worker (worker-\S+)", master_log)
    assert len({worker for _, worker in launched}) == 2, master_log[-3000:]
    # ... the tasks ran there, and the driver started no executor of its own (local mode would).
    tasks_per_executor = {str(log): log.read_text(errors="replace").count("Running task") for log in cluster.executor_logs()}
    assert sum(tasks_per_executor.values()) > 0, tasks_per_executor
    assert "Starting executor ID driver" not in driver_output
    # State went to the local default for an object-store root, nothing to a relative "s3:" path.
    state_dir = Path(StreamsConfig.load({"application_id": deltastreams.jobs.pageview.APPLICATION_ID, "root": s3_root}).local_state_dir)
    assert (state_dir / deltastreams.jobs.pageview.APPLICATION_ID).is_dir() and not (tmp_path / "s3:").exists()
    shutil.rmtree(state_dir)

    results = subprocess.run(
        [sys.executable, "-m", "deltastreams.jobs.pageview", "results", "--root", s3_root, *options], capture_output=True, text=True, env=environment, timeout=300
    )
    assert results.returncode == 0, results.stderr[-3000:]
    lines = results.stdout.splitlines()
    assert lines[0] == "category,window_start,window_end,count"
    got = pd.DataFrame([line.split(",") for line in lines[1:]], columns=lines[0].split(","))
    expected = final_counts(source_events(s3_root), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    assert len(expected) > 50
    assert_df_equality(as_spark(spark, got), as_spark(spark, expected), ignore_row_order=True)


def as_spark(spark, frame: pd.DataFrame):
    return spark.createDataFrame(frame.astype({"window_start": "int64", "window_end": "int64", "count": "int64"}))
