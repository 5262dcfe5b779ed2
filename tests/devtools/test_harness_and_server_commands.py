"""The harness, oracle and server commands, each run as a user types it at its smallest useful size:
what it prints (a verdict with its counts; a server's address) is checked, and a server command must
serve and stop on SIGTERM leaving no process behind. The harnesses' own checks are tested with
their library functions elsewhere (tests/streams/test_exactly_once.py, tests/jobs/test_enrich.py,
tests/kafka/test_kafka_sink_kill_points.py); here the command lines are. ``harness.soak`` has
tests/jobs/test_soak_smoke.py; ``harness.cluster`` and ``servers.netns_cluster`` need the
multi-host cluster and run in tests/cluster/test_commands_on_the_cluster.py."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest

from deltastreams.devtools.servers.process_tree import job_processes, still_running
from tests.devtools.test_bench_commands import command

pytestmark = pytest.mark.slow


def test_crash_harness_kills_the_job_and_reports_no_violation(tmp_path):
    out = command(
        "deltastreams.devtools.harness.crash", "--root", str(tmp_path / "h"), "--trials", "1", "--events", "1200", "--appends", "2",
        "--append-per-trial", "300", "--max-records-per-batch", "400", "--points", "after_commit", "--seed", "5",
    )
    assert re.search(r"guarantee exactly_once, emit revisions, .*: 1 trials in \d+ s", out), out
    windows = int(re.search(r"windows checked: (\d+), wrong: 0\b", out).group(1))
    assert windows > 0 and "after_commit" in out, out
    assert re.search(r"^\s+violations: 0$", out, re.M), out


def test_join_harness_kills_the_dedup_job_and_reports_no_violation(tmp_path):
    out = command("deltastreams.devtools.harness.enrich", "--root", str(tmp_path / "h"), "--job", "dedup", "--trials", "1", "--seed", "3")
    found = re.search(r"^dedup, exactly_once: 1 trials \(kills: (\{.*\})\); (.+); violations: (\d+)$", out, re.M)
    assert found and found.group(3) == "0", out


def test_differential_command_compares_scenarios_with_kafka_streams_and_finds_no_difference(tmp_path):
    out = command("deltastreams.devtools.differential", "--scenarios", "6", "--seed", "4", "--failures", str(tmp_path / "failures"))
    rows = re.findall(r"^\| (\w+)\s+\|\s+(\d+) \|\s+(\d+) \|\s+(\d+) \|\s+(\d+) \|$", out, re.M)
    assert sum(int(n) for _, n, _, _, _ in rows) == 6, out
    assert all(different == "0" for *_, different in rows), out
    assert re.search(r"Kafka Streams [\d.]+ TopologyTestDriver vs deltastreams, seed 4, 6 scenarios", out), out


def serve_then_stop(module: str, *args: str, ready: str, timeout_s: float = 120) -> str:
    """Start a server command, wait for ``ready`` in its output, SIGTERM it; its output once it
    exited (0), after checking it left no process behind."""
    server = subprocess.Popen([sys.executable, "-m", module, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + timeout_s
    try:
        while not any(re.search(ready, line) for line in lines):
            line = server.stdout.readline()
            assert line or server.poll() is None, f"{module} exited {server.poll()}:\n{''.join(lines)}"
            lines.append(line)
            assert time.monotonic() < deadline, f"{module} not ready in {timeout_s} s:\n{''.join(lines)}"
        children = job_processes(server.pid)[1:]
        assert children, "a server command runs its server as a child process"
        server.send_signal(signal.SIGTERM)
        rest, _ = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, "".join(lines) + rest
    time.sleep(0.5)
    assert still_running(children) == [], "processes left after the server stopped"
    return "".join(lines) + rest


def test_kafka_broker_command_serves_and_stops_on_sigterm():
    out = serve_then_stop("deltastreams.devtools.servers.kafka_broker", ready=r"Apache Kafka [\d.]+ at 127\.0\.0\.1:\d+")
    bootstrap = re.search(r"at (127\.0\.0\.1:\d+)", out).group(1)
    assert bootstrap, out


def test_s3_server_command_prints_its_settings_serves_and_stops_on_sigterm():
    out = serve_then_stop("deltastreams.devtools.servers.s3_server", ready=r"export AWS_SECRET_ACCESS_KEY=")
    assert re.search(r"^root: s3://\S+", out, re.M) and re.search(r"^export AWS_ENDPOINT_URL=http://127\.0\.0\.1:\d+$", out, re.M), out


def test_standalone_cluster_command_starts_a_master_with_workers_and_stops_on_sigterm(tmp_path):
    out = serve_then_stop(
        "deltastreams.devtools.servers.standalone_cluster", "--workers", "1", "--worker-memory", "512m", "--dir", str(tmp_path), ready=r"master spark://"
    )
    assert re.search(r"master spark://127\.0\.0\.1:\d+", out), out
