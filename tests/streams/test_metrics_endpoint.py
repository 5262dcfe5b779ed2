"""The metrics endpoint without Spark: real Delta input topics, a real HTTP server, scraped with
urllib and parsed by Prometheus' own parser."""

import socket
from types import SimpleNamespace

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import ConfigError
from deltastreams.jobs.pageview import INPUT_TOPIC, generate
from deltastreams.sinks import Topic
from deltastreams.streams._internal.runtime.lifecycle import AppState, Lifecycle
from deltastreams.streams._internal.runtime.metrics import InputView, MetricsEndpoint
from tests.streams.metrics_support import free_port, scrape


def batch(subtopology, batch_id, *, records_in, records_out=0, dropped_late=0, dead_letters=0, sink_timestamps=None, started_at=1000.0):
    """What the trigger reports for a committed batch (its BatchMetrics' fields)."""
    return SimpleNamespace(
        subtopology=subtopology, batch_id=batch_id, records_in=records_in, records_out=records_out, dropped_late=dropped_late,
        dead_letters=dead_letters, restored_entries=0, task_phases={"restore": 0.5}, standby_entries=0, commit_seconds=0.04,
        total_seconds=0.25, started_at=started_at, sink_timestamps=sink_timestamps,
    )  # fmt: skip


@pytest.fixture
def endpoint():
    started = []

    def start(application_id="app", subtopologies=(0, 1), state=lambda: AppState.RUNNING):
        e = MetricsEndpoint(application_id, subtopologies, port=free_port(), state=state)
        e.start()
        started.append(e)
        return e

    yield start
    for e in started:
        e.stop()


def test_records_lag_counts_the_records_of_the_versions_not_yet_consumed_per_partition(tmp_path, endpoint):
    root = str(tmp_path)
    generate(root, 1000, batches=2, late_fraction=0)  # versions 1 and 2: 500 records each
    topic = Topic.open(root, INPUT_TOPIC)
    ends = topic.end_offsets()
    consumed = {"version": -1}
    e = endpoint()
    e.watch_inputs(InputView({INPUT_TOPIC: topic.uri}, lambda: {INPUT_TOPIC: 2}, lambda t: consumed["version"], {INPUT_TOPIC: 2}))

    def lag():
        samples = scrape(e.port)
        by_partition = {int(dict(k[1])["partition"]): v for k, v in samples.items() if k[0] == "deltastreams_records_lag"}
        return by_partition, samples[("deltastreams_versions_lag", (("topic", INPUT_TOPIC),))]

    assert lag() == ({0: ends[0], 1: ends[1]}, 3)  # nothing consumed: every record, versions 0-2
    consumed["version"] = 1
    behind, versions = lag()
    assert sum(behind.values()) == 500 and versions == 1
    consumed["version"] = 2
    assert lag() == ({0: 0, 1: 0}, 0)  # caught up: each partition's series stays, at 0


def test_each_application_serves_its_own_numbers_on_its_own_port(endpoint):
    first, second = endpoint("first"), endpoint("second", subtopologies=(0,), state=lambda: AppState.REBALANCING)
    first.batch_done(batch(0, 1, records_in=7, records_out=5, sink_timestamps=(990_000, 999_000)))
    first.batch_done(batch(0, 2, records_in=3, dropped_late=2, dead_letters=1))
    second.batch_done(batch(0, 1, records_in=100))
    one, two = scrape(first.port), scrape(second.port)
    assert one[("deltastreams_process_records_total", (("subtopology", "0"),))] == 10
    assert one[("deltastreams_process_records_total", (("subtopology", "1"),))] == 0  # known before its first batch
    assert one[("deltastreams_commit_total", (("subtopology", "0"),))] == 2
    assert one[("deltastreams_dropped_records_total", (("reason", "late"), ("subtopology", "0")))] == 2
    assert one[("deltastreams_dead_letter_records_total", (("subtopology", "0"),))] == 1
    assert one[("deltastreams_restore_seconds_total", (("subtopology", "0"),))] == 1.0
    assert one[("deltastreams_commit_latency_seconds_count", (("subtopology", "0"),))] == 2
    # committed at 1000.25 s: the records written were stamped 990 s and 999 s
    assert one[("deltastreams_record_e2e_latency_max_seconds", (("subtopology", "0"),))] == pytest.approx(10.25)
    assert one[("deltastreams_record_e2e_latency_min_seconds", (("subtopology", "0"),))] == pytest.approx(1.25)
    assert one[("deltastreams_application_info", (("application_id", "first"),))] == 1
    assert one[("deltastreams_application_state", (("state", "RUNNING"),))] == 1
    assert one[("deltastreams_application_state", (("state", "REBALANCING"),))] == 0
    assert two[("deltastreams_process_records_total", (("subtopology", "0"),))] == 100
    assert two[("deltastreams_application_state", (("state", "REBALANCING"),))] == 1
    assert ("deltastreams_application_info", (("application_id", "first"),)) not in two


def test_a_port_in_use_is_a_config_error_naming_the_port_and_the_setting():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"metrics port 127.0.0.1:{port} is in use .* --metrics-port \(metrics_port\)") as raised:
            MetricsEndpoint("app", (0,), port=port, state=lambda: AppState.CREATED).start()
    assert raised.value.setting == "metrics_port"


def test_stop_closes_the_port():
    e = MetricsEndpoint("app", (0,), port=free_port(), state=lambda: AppState.RUNNING)
    e.start()
    assert scrape(e.port)
    e.stop()
    with pytest.raises(OSError):
        scrape(e.port)
    e.start()  # the port is free again: the application can start again on it
    e.stop()


def test_metrics_port_is_off_by_default_and_must_be_a_port():
    assert StreamsConfig.load({"application_id": "a"}).metrics_port == 0
    assert StreamsConfig.load({"application_id": "a", "metrics_port": "9400"}).metrics_port == 9400
    with pytest.raises(ConfigError, match="metrics_port must be a TCP port"):
        StreamsConfig.load({"application_id": "a", "metrics_port": 70000})
    with pytest.raises(ConfigError, match=r"metrics_port must be a TCP port \(1-65535\), or 0 for no metrics endpoint, got 'nine'"):
        StreamsConfig.load({"application_id": "a", "metrics_port": "nine"})


def test_the_lifecycle_follows_kafkas_transitions():
    life = Lifecycle()
    assert life.state is AppState.CREATED
    assert life.to(AppState.REBALANCING) and life.to(AppState.RUNNING)
    assert not life.to(AppState.NOT_RUNNING)  # a running application stops through PENDING_SHUTDOWN
    assert life.to(AppState.PENDING_SHUTDOWN) and life.to(AppState.NOT_RUNNING)
    assert not life.to(AppState.PENDING_SHUTDOWN)  # stopping a stopped application changes nothing
    assert life.to(AppState.REBALANCING) and life.to(AppState.PENDING_ERROR) and life.to(AppState.ERROR)


def test_a_failed_start_ends_in_error_with_the_metrics_port_closed(tmp_path):
    from deltastreams.conf.errors import TopicNotFoundError
    from deltastreams.jobs.pageview import build_topology
    from deltastreams.streams.app import StreamsApp

    port = free_port()
    app = StreamsApp(build_topology(), StreamsConfig.load({"application_id": "pageview", "root": str(tmp_path), "metrics_port": port}))
    assert app.state is AppState.CREATED
    with pytest.raises(TopicNotFoundError):
        app.start()  # no input topic: fails before Spark starts
    assert app.state is AppState.ERROR
    with pytest.raises(OSError):
        scrape(port)


def test_records_lag_of_a_kafka_topic_is_end_offset_minus_committed_offset(endpoint):
    consumed = {"offsets": -1}  # never read: the committer's position for a Kafka topic it has not read
    e = endpoint()
    e.watch_inputs(InputView({}, lambda: {"clicks": {0: 10, 1: 5}}, lambda t: consumed["offsets"], {}))

    def lag():
        return {int(dict(k[1])["partition"]): v for k, v in scrape(e.port).items() if k[0] == "deltastreams_records_lag"}

    assert lag() == {0: 10, 1: 5}
    consumed["offsets"] = {0: 4, 1: 5}
    assert lag() == {0: 6, 1: 0}


def test_the_rate_keeps_only_its_window_of_batches_when_no_one_scrapes(monkeypatch):
    # A batch is remembered for the process rate: an endpoint no one scrapes must still forget
    # the batches older than the window (it grew by every batch, for the application's life).
    from deltastreams.streams._internal.runtime import metrics

    clock = {"now": 1000.0}
    monkeypatch.setattr(metrics.time, "monotonic", lambda: clock["now"])
    e = MetricsEndpoint("app", (0,), port=free_port(), state=lambda: AppState.RUNNING)  # never started, never scraped
    for i in range(3000):
        clock["now"] += 0.1
        e.batch_done(batch(0, i, records_in=10))
    assert len(e._scrape.rates["0"]) == pytest.approx(metrics.RATE_WINDOW_S / 0.1, abs=2)
    (rate,) = e._scrape._process_rate().samples
    assert rate.value == pytest.approx(100.0, rel=0.02)  # 10 records every 0.1 s
