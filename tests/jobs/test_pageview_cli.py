import subprocess
import sys

import pytest

from tests.topology.test_describe import PAGEVIEW


def cli(*args, check=True):
    return subprocess.run([sys.executable, "-m", "jobs.pageview", *args], capture_output=True, text=True, check=check, timeout=600)


def test_describe_command_prints_the_two_subtopology_description():
    assert cli("describe").stdout == PAGEVIEW


@pytest.mark.spark
def test_generate_run_results_end_to_end(tmp_path):
    root = str(tmp_path)
    cli("generate", "--root", root, "--events", "5000", "--batches", "2")
    run = cli("run", "--root", root, "--until-caught-up", "--commit-interval-ms", "100", "--grace-ms", "5000", "--max-records-per-batch", "2500")
    assert "processed" in run.stderr
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
