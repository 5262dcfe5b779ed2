"""The pageview job's metrics endpoint, scraped over HTTP while the job runs."""

import socket
import subprocess
import sys
import time

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.jobs.pageview import build_topology, generate, read_results
from deltastreams.streams.app import AppState, StreamsApp
from tests.streams.metrics_support import free_port, sample, scrape

EVENTS = 4000


def wait_until_caught_up(port: int, processed: int, timeout_s: float = 180) -> dict:
    """Scrapes until sub-topology 0 has processed ``processed`` records, no input record is behind
    and sub-topology 1 has processed every record sub-topology 0 repartitioned (it commits its batch
    after sub-topology 0's, so a scrape between the two sees it one batch behind); returns that scrape."""
    samples: dict = {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        samples = scrape(port)
        lags = [v for k, v in samples.items() if k[0] == "deltastreams_records_lag"]
        repartitioned = sample(samples, "deltastreams_output_records_total", subtopology="0")
        downstream_done = sample(samples, "deltastreams_process_records_total", subtopology="1") == repartitioned
        if sample(samples, "deltastreams_process_records_total", subtopology="0") == processed and lags and not any(lags) and downstream_done:
            return samples
        time.sleep(0.2)
    pytest.fail(f"the job did not catch up in {timeout_s} s; last scrape: {samples}")


@pytest.mark.spark
def test_a_running_pageview_job_serves_its_metrics_until_it_stops(spark, tmp_path):
    root = str(tmp_path)
    generate(root, EVENTS, batches=2)
    port = free_port()
    settings = {"application_id": "pageview", "root": root, "commit_interval_ms": 100, "max_records_per_batch": EVENTS // 2, "metrics_port": port}
    app = StreamsApp(build_topology(), StreamsConfig.load(settings), spark=spark)
    app.start()
    try:
        # Scraped while the job runs, caught up: every input record processed, nothing behind.
        samples = wait_until_caught_up(port, EVENTS)
        assert sample(samples, "deltastreams_application_state", state="RUNNING") == 1
        assert sample(samples, "deltastreams_records_lag", topic="pageview-events", partition="0") == 0
        assert sample(samples, "deltastreams_records_lag", topic="pageview-events", partition="1") == 0
        assert sample(samples, "deltastreams_versions_lag", topic="pageview-events") == 0
        assert sample(samples, "deltastreams_commit_total", subtopology="0") >= 2  # two bounded batches
        # Sub-topology 1 processes what sub-topology 0 repartitioned; it counts or drops as late.
        repartitioned = sample(samples, "deltastreams_output_records_total", subtopology="0")
        assert 0 < repartitioned < EVENTS  # the filter kept some
        assert sample(samples, "deltastreams_process_records_total", subtopology="1") == repartitioned
        assert sample(samples, "deltastreams_dropped_records_total", subtopology="1", reason="late") > 0  # the generator makes 5% late
        assert sample(samples, "deltastreams_process_rate", subtopology="0") > 0
        assert sample(samples, "deltastreams_commit_latency_seconds_count", subtopology="1") >= 1
        assert sample(samples, "deltastreams_record_e2e_latency_max_seconds", subtopology="1") >= sample(
            samples, "deltastreams_record_e2e_latency_min_seconds", subtopology="1"
        ) > 0
        assert sample(samples, "deltastreams_dead_letter_records_total", subtopology="0") == 0
        assert sample(samples, "deltastreams_retention_removed_files_total", step="purge") is not None
        # New input while it runs: the counters go on from where they were.
        generate(root, EVENTS // 2)
        samples = wait_until_caught_up(port, EVENTS + EVENTS // 2)
        assert sample(samples, "deltastreams_process_records_total", subtopology="1") == sample(samples, "deltastreams_output_records_total", subtopology="0")
    finally:
        app.stop()
    assert app.state is AppState.NOT_RUNNING
    # Every output record the endpoint counted is in the sink topic.
    assert read_results(root, raw=True).num_rows == sample(samples, "deltastreams_output_records_total", subtopology="1")
    with pytest.raises(OSError):  # the endpoint stopped with the application
        scrape(port)


def test_run_on_a_metrics_port_in_use_fails_at_once_with_a_clear_message(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", str(tmp_path), "--metrics-port", str(port)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert out.returncode == 1
    assert f"error: metrics port 127.0.0.1:{port} is in use" in out.stderr
    assert "give a free port with --metrics-port" in out.stderr
    assert "Traceback" not in out.stderr
    assert time.monotonic() - started < 60  # before Spark starts
