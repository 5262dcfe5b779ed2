"""An application's metrics for Prometheus: Kafka Streams' metrics, where they mean something
here, served by the driver in Prometheus' text exposition format (docs/metrics.md lists them).

The only module that imports ``prometheus_client``. Each application gets a registry of its own
(never the library's global one), so two applications in one process serve their own numbers on
their own ports. The numbers are what the runtime already has: counters and histograms are fed
with each committed batch's metrics (what ``--metrics-file`` writes), and the gauges read at
scrape time from what the driver already keeps (the input watcher's latest versions, the
committer's positions, the retention thread's totals, the lifecycle state). The one read a scrape
adds: the Delta commit files of input versions not yet consumed, each read once (for records lag).
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from deltastreams.conf.errors import ConfigError
from deltastreams.sinks import read_version
from deltastreams.streams._internal.runtime.lifecycle import AppState

log = logging.getLogger("deltastreams")

RATE_WINDOW_S = 30.0
"""``process_rate`` counts the records of the batches committed in this last window (Kafka's
rates are sampled over 2 x 30 s windows)."""

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass(frozen=True)
class InputView:
    """Where the endpoint reads input positions at scrape time (all kept by the driver anyway)."""

    delta_uris: Mapping[str, str]
    """Input topics that are Delta tables: their URIs."""
    latest: Callable[[], Mapping[str, int | Mapping[int, int]]]
    """Per input topic, its latest version (a Kafka topic: end offset per partition)."""
    consumed: Callable[[str], int | Mapping[int, int]]
    """Per input topic, what every sub-topology reading it has committed as consumed."""
    partitions: Mapping[str, int]
    """Partitions of each Delta input topic (each has a records-lag series, 0 when caught up)."""


class MetricsEndpoint:
    """One application's ``/metrics`` endpoint: :meth:`start` binds it (a clear error if the port
    is taken), :meth:`stop` closes it; :meth:`batch_done` is called with every committed batch's
    metrics."""

    def __init__(self, application_id: str, subtopologies: Iterable[int], *, port: int, address: str = "127.0.0.1", state: Callable[[], AppState]) -> None:
        self.port = port
        self.address = address
        self.registry = CollectorRegistry(auto_describe=True)
        self._server = None
        self._thread: threading.Thread | None = None
        self._scrape = _ScrapeTimeMetrics(state)
        self.registry.register(self._scrape)
        reg = self.registry
        sub = ["subtopology"]
        info = Gauge("deltastreams_application_info", "The application this endpoint serves (Kafka: client-metrics application-id)", ["application_id"], registry=reg)
        info.labels(application_id).set(1)
        self.processed = Counter("deltastreams_process_records", "Records processed by the sub-topology's tasks (Kafka: stream-thread process-total)", sub, registry=reg)
        self.emitted = Counter("deltastreams_output_records", "Records the sub-topology's tasks emitted to its sink and repartition topics", sub, registry=reg)
        self.commits = Counter("deltastreams_commit", "Batches the sub-topology committed (Kafka: stream-thread commit-total)", sub, registry=reg)
        self.dropped = Counter(
            "deltastreams_dropped_records", "Records dropped, by reason (Kafka: stream-task dropped-records-total)", ["subtopology", "reason"], registry=reg
        )
        self.dead_letters = Counter(
            "deltastreams_dead_letter_records", "Records routed to the dead-letter topic <application_id>-dlq (Kafka: a DLQ / deserialization errors)", sub, registry=reg
        )
        self.restored = Counter(
            "deltastreams_restore_entries", "Changelog entries tasks read back into their stores (Kafka: state-store restore-total)", sub, registry=reg
        )
        self.restore_seconds = Counter(
            "deltastreams_restore_seconds", "Time tasks spent restoring stores, summed over tasks (Kafka: restore-latency x restores)", sub, registry=reg
        )
        self.standby = Counter(
            "deltastreams_standby_entries", "Entries standby copies applied (Kafka: standby update-total)", registry=reg
        )
        self.commit_latency = Histogram(
            "deltastreams_commit_latency_seconds", "Time to commit a batch (Kafka: stream-thread commit-latency-avg/max)", sub, buckets=_LATENCY_BUCKETS, registry=reg
        )
        self.batch_latency = Histogram(
            "deltastreams_batch_latency_seconds",
            "From a trigger's start to the sub-topology's commit: plan, tasks, commit (Kafka: poll + process + commit)",
            sub,
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self.e2e_max = Gauge(
            "deltastreams_record_e2e_latency_max_seconds",
            "Last batch: its commit time minus the oldest timestamp of a record it wrote to a sink topic (Kafka: record-e2e-latency-max)",
            sub,
            registry=reg,
        )
        self.e2e_min = Gauge(
            "deltastreams_record_e2e_latency_min_seconds",
            "Last batch: its commit time minus the newest timestamp of a record it wrote to a sink topic (Kafka: record-e2e-latency-min)",
            sub,
            registry=reg,
        )
        self._last_standby_batch: int | None = None
        for s in subtopologies:  # every series from the first scrape on: dashboards see 0, not "no data"
            label = str(s)
            for counter in (self.processed, self.emitted, self.commits, self.dead_letters, self.restored, self.restore_seconds):
                counter.labels(label)
            self.dropped.labels(label, "late")
            self.commit_latency.labels(label)
            self.batch_latency.labels(label)
            self._scrape.rates.setdefault(label, deque())

    # -- serving ------------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self._server, self._thread = start_http_server(self.port, addr=self.address, registry=self.registry)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"metrics port {self.address}:{self.port} is in use (another process, or another application of this one, listens there): "
                    "give a free port with --metrics-port (metrics_port), or 0 for no metrics endpoint",
                    setting="metrics_port",
                ) from None
            raise ConfigError(f"cannot serve metrics on {self.address}:{self.port}: {e.strerror or e} (check metrics_address and metrics_port)", setting="metrics_address") from None
        log.info("metrics: http://%s:%d/metrics", self.address, self.port)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # -- what feeds it ------------------------------------------------------------------------

    def watch_inputs(self, inputs: InputView) -> None:
        self._scrape.inputs = inputs

    def watch_retention(self, totals: Callable[[], Mapping[str, Mapping[str, int]]]) -> None:
        """``totals()``: per retention step, its cumulative counts (``files_removed``, ...)."""
        self._scrape.retention = totals

    def batch_done(self, metrics) -> None:
        """A sub-topology committed a batch (``metrics``: the trigger's ``BatchMetrics``)."""
        sub = str(metrics.subtopology)
        self.processed.labels(sub).inc(metrics.records_in)
        self.emitted.labels(sub).inc(metrics.records_out)
        self.commits.labels(sub).inc()
        self.dropped.labels(sub, "late").inc(metrics.dropped_late)
        self.dead_letters.labels(sub).inc(metrics.dead_letters)
        self.restored.labels(sub).inc(metrics.restored_entries)
        self.restore_seconds.labels(sub).inc(metrics.task_phases.get("restore", 0.0))
        if metrics.standby_entries and metrics.batch_id != self._last_standby_batch:  # one count per trigger, not per sub-topology
            self._last_standby_batch = metrics.batch_id
            self.standby.inc(metrics.standby_entries)
        self.commit_latency.labels(sub).observe(metrics.commit_seconds)
        self.batch_latency.labels(sub).observe(metrics.total_seconds)
        committed_ms = (metrics.started_at + metrics.total_seconds) * 1000
        if metrics.sink_timestamps is not None:
            oldest, newest = metrics.sink_timestamps
            self.e2e_max.labels(sub).set(max(0.0, committed_ms - oldest) / 1000)
            self.e2e_min.labels(sub).set(max(0.0, committed_ms - newest) / 1000)
        self._scrape.batch_done(sub, metrics.records_in)


class _ScrapeTimeMetrics(Collector):
    """Gauges computed when Prometheus scrapes: state, rates, lag, retention totals."""

    def __init__(self, state: Callable[[], AppState]) -> None:
        self.state = state
        self.inputs: InputView | None = None
        self.retention: Callable[[], Mapping[str, Mapping[str, int]]] | None = None
        self.rates: dict[str, deque[tuple[float, int]]] = {}
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._records_per_version: dict[str, dict[int, dict[int, int]]] = {}
        """Per Delta input topic, per version not yet consumed: records per partition it added."""

    def batch_done(self, sub: str, records: int) -> None:
        now = time.monotonic()
        with self._lock:
            batches = self.rates.setdefault(sub, deque())
            batches.append((now, records))
            _forget_before(batches, now - RATE_WINDOW_S)  # here too: with no one scraping, nothing else would

    def describe(self):
        return []  # computed at scrape time: nothing to check at registration

    def collect(self):
        yield self._state()
        yield self._process_rate()
        if self.inputs is not None:
            yield from self._lag(self.inputs)
        if self.retention is not None:
            yield from self._retention(self.retention())

    def _state(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "deltastreams_application_state", "1 for the application's current state, 0 for the others (Kafka: client-metrics state)", labels=["state"]
        )
        current = self.state()
        for state in AppState:
            family.add_metric([state.value], 1.0 if state is current else 0.0)
        return family

    def _process_rate(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "deltastreams_process_rate", f"Records processed per second over the last {RATE_WINDOW_S:.0f} s (Kafka: stream-thread process-rate)", labels=["subtopology"]
        )
        now = time.monotonic()
        window = max(1e-3, min(RATE_WINDOW_S, now - self._started))
        with self._lock:
            for sub, batches in sorted(self.rates.items()):
                _forget_before(batches, now - RATE_WINDOW_S)
                family.add_metric([sub], sum(n for _, n in batches) / window)
        return family

    def _lag(self, inputs: InputView):
        records = GaugeMetricFamily(
            "deltastreams_records_lag", "Records of the input topic partition not yet consumed (Kafka: consumer-fetch-manager records-lag)", labels=["topic", "partition"]
        )
        versions = GaugeMetricFamily(
            "deltastreams_versions_lag", "Versions (commits) of a Delta input topic not yet consumed: a log-position lag with no Kafka counterpart", labels=["topic"]
        )
        for topic, latest in sorted(inputs.latest().items()):
            try:
                consumed = inputs.consumed(topic)
                if isinstance(latest, Mapping):  # a Kafka topic: offsets per partition
                    # Never read: behind from offset 0 (the low watermark is not asked for).
                    start = consumed if isinstance(consumed, Mapping) else {}
                    behind = {p: max(0, end - start.get(p, 0)) for p, end in latest.items()}
                else:
                    behind = self._records_behind(topic, inputs.delta_uris[topic], consumed, latest, inputs.partitions[topic])
                    versions.add_metric([topic], max(0, latest - consumed))
            except Exception:  # noqa: BLE001 - a scrape must not fail for a transient read; this topic's series skip a scrape
                log.debug("lag of %s not computed", topic, exc_info=True)
                continue
            for partition, n in sorted(behind.items()):
                records.add_metric([topic, str(partition)], n)
        return [records, versions]

    def _records_behind(self, topic: str, uri: str, consumed: int, latest: int, partitions: int) -> dict[int, int]:
        with self._lock:
            pending = self._records_per_version.setdefault(topic, {})
            for version in [v for v in pending if v <= consumed]:
                del pending[version]
            for version in range(consumed + 1, latest + 1):
                if version not in pending:  # each commit file read once, as the planner reads it
                    added: dict[int, int] = {}
                    for f in read_version(uri, version).files:  # as the planner judges them: bad input aside
                        added[f.partition] = added.get(f.partition, 0) + max(f.num_records, 0)
                    pending[version] = added
            behind = dict.fromkeys(range(partitions), 0)
            for added in pending.values():
                for partition, n in added.items():
                    behind[partition] = behind.get(partition, 0) + n
        return behind

    def _retention(self, totals: Mapping[str, Mapping[str, int]]):
        removed = _counter("deltastreams_retention_removed_files", "Files retention removed from tables (purge, compaction, optimize, expiry)", totals, "files_removed")
        deleted = _counter("deltastreams_retention_deleted_files", "Files retention deleted from storage (unreferenced data files, old log files)", totals, "files_deleted")
        deleted_bytes = _counter("deltastreams_retention_deleted_bytes", "Bytes of data files retention deleted from storage", totals, "bytes_deleted")
        return [removed, deleted, deleted_bytes]


def _forget_before(batches: deque[tuple[float, int]], start: float) -> None:
    while batches and batches[0][0] < start:
        batches.popleft()


def _counter(name: str, documentation: str, totals: Mapping[str, Mapping[str, int]], key: str) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=["step"])
    for step, counts in sorted(totals.items()):
        family.add_metric([step], counts.get(key, 0))
    return family
