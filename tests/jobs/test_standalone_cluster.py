"""spark-submit to a real standalone cluster (a master and two one-core workers, each its own JVM,
on loopback): the job must run on the workers' executors, not silently in local mode, and give
the counts of an independent computation."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from chispa import assert_df_equality

import jobs.pageview
from jobs.pageview import generate, read_results
from jobs.pageview_reference import final_counts, source_events
from jobs.standalone_cluster import StandaloneCluster, cluster_environment, spark_home

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WINDOW_MS, GRACE_MS = 5000, 5000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2, worker_memory="1500m") as running:
        yield running


def test_spark_submit_master_runs_the_pageview_job_on_the_workers(spark, cluster, tmp_path):
    root = tmp_path / "root"
    generate(str(root), 20_000, seed=11, late_fraction=0.1, max_lateness_ms=20_000, batches=3)
    submit = [
        str(Path(spark_home()) / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--executor-memory", "1g",
        "--conf", "spark.sql.shuffle.partitions=3",
        jobs.pageview.__file__, "run", "--root", str(root), "--until-caught-up",
        "--window-ms", str(WINDOW_MS), "--grace-ms", str(GRACE_MS), "--commit-interval-ms", "200",
        "--max-records-per-batch", "8000",
        # a Spark stage per sub-topology and a Spark task per deltastreams task, so the work is spread
        "--set", "single_task_records=0",
        "--log-file", str(tmp_path / "driver.log"),
    ]  # fmt: skip
    run = subprocess.run(submit, capture_output=True, text=True, env=cluster_environment(sys.executable), timeout=600)
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

    expected = final_counts(source_events(str(root)), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    assert_df_equality(as_spark(spark, read_results(str(root)).to_pandas()), as_spark(spark, expected), ignore_row_order=True)


def as_spark(spark, frame: pd.DataFrame):
    return spark.createDataFrame(frame.astype({"window_start": "int64", "window_end": "int64", "count": "int64"}))
