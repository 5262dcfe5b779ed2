"""Spark's own output goes to the job's log file also when the JVM was running already (under
spark-submit, or a session this process started before): log4j's console appenders and
``System.err``, where Python workers' stderr goes, move to the file. (The JVM this process starts
itself gets the file as its stderr: tests/jobs/test_pageview_cli.py runs a failing job that way.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent(
    """
    import sys
    from deltastreams.conf import StreamsConfig
    from deltastreams.streams._internal.spark.session import spark_session

    config = StreamsConfig.load({"application_id": "spark-log"})
    spark_session(config)  # a session with Spark's output on the terminal, as a notebook's
    spark = spark_session(config, log_file=sys.argv[1])
    spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark.Probe").warn("a warning of the JVM")

    def noisy(rows):
        print("a Python worker's stderr", file=sys.stderr, flush=True)
        return rows

    spark.sparkContext.parallelize([1], 1).mapPartitions(noisy).collect()
    print("our own line", file=sys.stderr)
    spark.stop()
    """
)


@pytest.mark.spark
def test_a_running_jvms_log_and_python_workers_stderr_move_to_the_log_file(tmp_path):
    log = tmp_path / "logs" / "job.log"
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(log)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "our own line" in out.stderr
    assert "a warning of the JVM" not in out.stderr and "a Python worker's stderr" not in out.stderr
    logged = log.read_text()
    assert "WARN Probe: a warning of the JVM" in logged
    assert "a Python worker's stderr" in logged
