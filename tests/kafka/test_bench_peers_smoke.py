"""The peers benchmark end to end on its quickest peer: Kafka Streams 4.3.1 on a real broker, run to
its own end, timed, its counts checked against the order its repartition topic holds, reported."""

import json
import time

import pytest

from deltastreams.devtools.bench.peers import run as bench_peers

pytestmark = pytest.mark.slow


def test_bench_peers_runs_kafka_streams_checks_it_and_reports(tmp_path):
    started = time.monotonic()
    out = tmp_path / "out"
    argv = ["--peers", "kafka-streams", "--events", "20000", "--intervals", "100", "--reps", "1", "--no-latency", "--out", str(out), "--work-dir", str(tmp_path / "work")]
    assert bench_peers.main(argv) == 0
    results = json.loads((out / "peers.json").read_text())
    (run,) = results["runs"]
    assert run["peer"] == "kafka-streams" and run["check"]["ok"], run["check"]
    assert run["check"]["counted"] > 0 and run["check"]["windows"] > 0
    assert 0 < run["steady_s"] < run["whole_s"] < time.monotonic() - started
    assert run["profile"]["processing_s"] == pytest.approx(run["steady_s"])
    report = (out / "peers.md").read_text()
    assert "Kafka Streams 4.3.1, Kafka -> Kafka" in report and "| 1 | 1 |" in report  # one run checked, one passed
    # Resumable: the run is there, so a second invocation runs nothing and keeps it.
    assert bench_peers.main(argv) == 0
    assert len(json.loads((out / "peers.json").read_text())["runs"]) == 1
