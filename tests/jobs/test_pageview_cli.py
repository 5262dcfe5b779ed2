import subprocess
import sys
from pathlib import Path

import pytest

from tests.topology.test_describe import PAGEVIEW


def cli(*args, check=True):
    return subprocess.run([sys.executable, "-m", "deltastreams.jobs.pageview", *args], capture_output=True, text=True, check=check, timeout=600)


def test_describe_command_prints_the_two_subtopology_description():
    assert cli("describe").stdout == PAGEVIEW


@pytest.mark.spark
def test_generate_run_results_end_to_end(tmp_path):
    root = str(tmp_path)
    cli("generate", "--root", root, "--events", "5000", "--batches", "2")
    run = cli("run", "--root", root, "--until-caught-up", "--commit-interval-ms", "100", "--grace-ms", "5000", "--max-records-per-batch", "2500")
    assert "processed" in run.stderr
    # Spark's own output (its banner, log4j lines) is in the log file, not on the terminal
    assert "log4j" not in run.stderr and " WARN " not in run.stderr, run.stderr
    # The first batch is committed while the JVM still starts (the driver calls the task hosts it
    # started itself), not after the session and the query are up; a run that catches up before
    # the session is up ends there (on a loaded machine, the session may come first).
    logged = Path(run.stderr.split("log file: ", 1)[1].split("\n", 1)[0]).read_text()
    first_batch = logged.find("sub-topology 0 batch 0: 2,500 in")
    session_up, caught_up_first = logged.find("Spark session started in"), logged.find("before its Spark session was up: the query was not started")
    assert (session_up < 0) != (caught_up_first < 0), logged[:3000]
    assert 0 <= first_batch < max(session_up, caught_up_first), logged[:3000]
    lines = cli("results", "--root", root).stdout.splitlines()
    assert lines[0] == "category,window_start,window_end,count"
    total = sum(int(line.rsplit(",", 1)[1]) for line in lines[1:])
    assert 0 < total <= 5000
    raw = cli("results", "--root", root, "--raw").stdout.splitlines()
    # two batches, each revising the same windows: every revision is in the raw output
    assert raw[0] == "partition,offset,timestamp,category,window_start,window_end,count" and len(raw) > len(lines)


def test_run_on_a_missing_topic_fails_with_a_clear_message_and_no_traceback(tmp_path):
    out = cli("run", "--root", str(tmp_path), "--until-caught-up", check=False)
    assert out.returncode == 1
    assert "error: source topic 'pageview-events' does not exist" in out.stderr
    assert "Traceback" not in out.stderr


def test_run_on_a_root_that_does_not_exist_names_the_missing_input_topic_and_the_root(tmp_path):
    root = tmp_path / "pvv"
    out = cli("run", "--root", str(root), "--until-caught-up", check=False)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"error: source topic 'pageview-events' does not exist: there is no deltastreams root at {root} (nothing was ever generated or run there)" in out.stderr


@pytest.mark.spark
def test_a_failing_run_says_what_failed_in_a_few_lines_and_logs_sparks_stack_traces(tmp_path):
    """A task failing inside Spark used to put ~550 lines of Spark's log4j output and Python worker
    tracebacks on the terminal before the three lines that matter. Here: a record the filter cannot
    judge (another writer left duration_s null) with on_bad_record = fail. (A damaged input file no
    longer fails a run: it goes to the dead-letter topic, or stops it naming `skip`:
    tests/streams/test_bad_input.py.)"""
    import pyarrow as pa
    from deltalake import write_deltalake

    root, log = str(tmp_path / "root"), tmp_path / "run.log"
    cli("generate", "--root", root, "--events", "2000")
    row = {"partition": pa.array([0], pa.int32()), "offset": pa.array([None], pa.int64()), "timestamp": pa.array([1_700_000_000_000], pa.int64())}
    row.update({"user_id": ["u"], "page_id": ["p"], "category": ["news"], "duration_s": pa.array([None], pa.int32())})
    write_deltalake(f"{root}/topics/pageview-events", pa.table(row), mode="append")
    out = subprocess.run(
        [sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", root, "--until-caught-up", "--log-file", str(log), "--set", "on_bad_record=fail"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )
    terminal = out.stdout.splitlines()
    assert out.returncode == 1
    assert len(terminal) <= 30, out.stdout
    error, action, details = terminal[-3:]
    assert error.startswith("error: RecordError: KSTREAM-FILTER-0000000001 cannot process a record") and "is null for this record" in error, error
    assert action.startswith("what to do: the stack traces are in the log file")
    assert details == f"details: {log}"
    assert "Traceback" not in out.stdout and "log4j" not in out.stdout
    logged = Path(log).read_text()
    assert "ERROR Executor: Exception in task" in logged  # Spark's log4j output, with the Java stack trace
    assert "\tat org.apache.spark." in logged
    assert "deltastreams.conf.errors.RecordError" in logged and "Traceback (most recent call last)" in logged  # the Python worker's
