"""StreamsApp: run a topology on Spark, one Structured Streaming query per application.

    app = StreamsApp(topology, {"application_id": "pageviews", "root": "/data"})
    app.run(until_caught_up=True)     # or: app.start(); ...; app.stop()

    if __name__ == "__main__":        # or give a program the bundled jobs' command line:
        StreamsApp.main(build_topology, {"application_id": "pageviews"})   # python app.py run --root /data

Each trigger of the query (at most every ``commit_interval_ms``, when an input topic has new
versions) runs every sub-topology with input, upstream first, as one Spark job, and commits each
sub-topology with its own transaction: a record crosses the whole topology in one trigger. Source
positions live in the transaction logs (``<root>/transactions/<application_id>/``), so Spark's
checkpoint is only a cache of the current run: each start gets a fresh one on the driver's local
disk (``<state_dir>/<application_id>/checkpoints/``), and a lost or corrupt checkpoint costs
nothing but a restart of the query. The driver watches the input topics and tells the query when
there is input (:mod:`deltastreams.streams._internal.spark.ticks`). ``until_caught_up`` stops once all input
present at start has been processed.

While it runs, the console shows a line per micro-batch and the log file everything else
(:mod:`deltastreams.streams.console`), in a program as on the command line.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from deltastreams.conf import BadRecordPolicy, StreamsConfig
from deltastreams.conf.errors import ConfigError, DeltaStreamsError, TopicNotFoundError, TopologyError
from deltastreams.sinks import Topic, check_encoded_values, check_expected_types, is_object_store, require_exclusive_commits, require_reachable, root_has_topics, use_storage_options
from deltastreams.streams._internal.runtime import task_host
from deltastreams.streams._internal.runtime.arrow_memory import use_system_pool
from deltastreams.streams._internal.runtime.bad_input import BadInputReport, stop_error
from deltastreams.streams._internal.runtime.checkpoints import fresh_checkpoint
from deltastreams.streams._internal.runtime.committer import Committer
from deltastreams.streams._internal.runtime.failures import Failure, explain, root_cause
from deltastreams.streams._internal.runtime.idle import IdleClock, keeps_time
from deltastreams.streams._internal.runtime.input_schema import AddedColumns, check_at_start
from deltastreams.streams._internal.runtime.inputs import InputLog
from deltastreams.streams._internal.runtime.kafka_sink import KafkaMirror
from deltastreams.streams._internal.runtime.kafka_sources import KafkaSources
from deltastreams.streams._internal.runtime.lifecycle import AppState, Lifecycle
from deltastreams.streams._internal.runtime.metrics import InputView, MetricsEndpoint
from deltastreams.streams._internal.runtime.plan import BatchSettings, ShippedTopology
from deltastreams.streams._internal.runtime.planner import Planner
from deltastreams.streams._internal.runtime.progress import Progress
from deltastreams.streams._internal.runtime.heartbeat import Heartbeat
from deltastreams.streams._internal.runtime.rescale_marker import require_no_rescale
from deltastreams.streams._internal.runtime.reset_marker import require_no_reset
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.streams._internal.runtime.retention import Retention
from deltastreams.streams._internal.runtime.skips import PROPERTY as SKIPS
from deltastreams.streams._internal.runtime.skips import Skips
from deltastreams.streams._internal.runtime.timing import Phases
from deltastreams.streams._internal.runtime.topology_guard import check_topology_upgrade, keep_records
from deltastreams.streams._internal.spark.session import spark_session
from deltastreams.streams._internal.spark.session_start import SessionStart, embedded_master, prepare_task_hosts
from deltastreams.streams._internal.spark.job import TriggerJob
from deltastreams.streams._internal.spark.trigger import BatchMetrics, Trigger
from deltastreams.streams.command_line import CommandLine
from deltastreams.streams.console import default_log_file, log_to, say_failure
from deltastreams.streams.errors import ApplicationFailedError
from deltastreams.streams.spark import topic_frame
from deltastreams.topology.compile import compile_subtopology, for_executors
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import CogroupAggregateNode, SourceNode, StreamStreamJoinNode, StreamTableJoinNode, TableTableJoinNode

_JOINS = (StreamTableJoinNode, StreamStreamJoinNode, TableTableJoinNode, CogroupAggregateNode)
"""Nodes that read several inputs key by key (joins, cogroups): their topics must be
co-partitioned."""

log = logging.getLogger("deltastreams")
_CHECKPOINT_RESTARTS = 3


class StreamsApp:
    """A running application: Kafka Streams' ``KafkaStreams``, on Spark.

    ``config`` is a :class:`StreamsConfig` or a mapping of its settings (``StreamsConfig.load``'s
    names: ``{"application_id": "clicks", "root": "/data"}``). ``spark``: a session to run on
    (default: the one spark-submit set up, else an embedded ``local[2]``). ``loglevel``: the
    console's level for the application's lines (a line per micro-batch at INFO), or None to leave
    logging to the program; ``log_file``: where details go (default:
    ``<state_dir>/<application_id>/logs/``), Spark's own output too when the application starts
    the session."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig | Mapping[str, Any],
        *,
        spark=None,
        loglevel: int | str | None = "INFO",
        log_file: str | Path | None = None,
    ) -> None:
        self.topology = topology
        self.config = config if isinstance(config, StreamsConfig) else StreamsConfig.load(config)
        config = self.config
        # This process's table and file accesses (the registry's, the committer's) reach the root
        # with these options; tasks get them in their plan.
        use_storage_options(config.storage_options)
        self.spark = spark
        self._owns_spark = spark is None
        self.kafka = KafkaSources(config.kafka, topology) if config.kafka.source_topics else None
        """Input topics read from Kafka (``kafka.source_topics``)."""
        self.registry = TopicRegistry(config, topology, self.kafka)
        self.progress = Progress()
        self.committer: Committer | None = None
        self.trigger: Trigger | None = None
        self.query = None
        self._caught_up_before_query: dict[str, int] | None = None
        """Set when a run until caught up consumed its input before its Spark session was up: the
        input's ends it reached (the query was never started)."""
        self._abandoned_start: SessionStart | None = None
        """That session's start, still under way then (:meth:`close_spark` ends it)."""
        self.checkpoint: str | None = None
        self.retention: Retention | None = None
        self.kafka_mirror: KafkaMirror | None = None
        self.heartbeat: Heartbeat | None = None
        """Tells ``status`` and ``reset`` this instance is alive (:mod:`deltastreams.streams._internal.runtime.heartbeat`)."""
        self._checkpoint_restarts = 0
        self.log_file: str | None = str(log_file) if log_file is not None else None
        """Where details go (set at :meth:`start` unless ``loglevel`` is None); Spark's own output
        goes there too (its log, its Python workers' stderr) when this application starts the session."""
        self.loglevel = loglevel
        self._logging_set_up = False
        self._reports_itself = False
        """The application says its end (a summary, or a failure in three lines) on the console
        itself; under a command line (:func:`deltastreams.streams.console.run_from_terminal`) the
        command line does."""
        self._lifecycle = Lifecycle()
        self._failed = False
        self.metrics: MetricsEndpoint | None = None
        """The Prometheus endpoint while the application runs (``metrics_port`` set), else None."""

    @property
    def state(self) -> AppState:
        """Where the application is in its lifecycle (Kafka's ``KafkaStreams.state()``)."""
        return self._lifecycle.state

    @property
    def history(self) -> list[BatchMetrics]:
        """Metrics of the sub-topology batches this instance committed, in order: the most recent
        10,000 (the metrics file and the log have all of them)."""
        return list(self.trigger.history) if self.trigger is not None else []

    def topic_frame(self, name: str, *, streaming: bool = False, options: dict[str, str] | None = None):
        """A topic of this application (input, output, or internal) as a DataFrame of its Spark
        session, started if need be: :func:`deltastreams.streams.spark.topic_frame`."""
        if self.spark is None:
            self.spark = spark_session(self.config, log_file=self.log_file)
        return topic_frame(self.spark, self.config.root, self.registry.physical(name), streaming=streaming, options=options)

    # -- the command line ---------------------------------------------------------------------

    @classmethod
    def main(cls, topology: Topology | Callable[[], Topology], settings: Mapping[str, Any], *, argv: list[str] | None = None) -> NoReturn:
        """Give a program the bundled jobs' command line and exit with its code: ``run``,
        ``describe``, ``status``, ``reset``, ``query``, ``rescale``, ``compact``, ``results``
        (``python app.py --help``), under ``python`` and ``spark-submit`` alike.
        ``settings`` (``application_id`` at least) are the application's own; a settings file
        (``--config``), ``--set`` and the flags override them."""
        try:  # --help shows the program's docstring
            command_line = cls.command_line(topology, settings, description=getattr(sys.modules.get("__main__"), "__doc__", None))
        except DeltaStreamsError as e:  # the program's own settings are wrong: said, not a traceback
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(1) from None
        raise SystemExit(command_line.main(argv))

    @classmethod
    def command_line(cls, topology, settings: Mapping[str, Any], *, prog: str | None = None, description: str | None = None) -> CommandLine:
        """The command line :meth:`main` runs, to add commands or options to first (as the
        bundled jobs add ``generate``): :class:`deltastreams.streams.command_line.CommandLine`."""
        return CommandLine(cls, topology, settings, prog=prog, description=description)

    # -- logging ------------------------------------------------------------------------------

    def log_to(self, log_file: str | Path, *, whole_process: bool = False) -> None:
        """Lines on the console (at ``loglevel``), details in ``log_file``
        (:func:`deltastreams.streams.console.log_to`); :meth:`start` calls it unless it was called
        already or ``loglevel`` is None."""
        self.log_file = str(log_file)
        log_to(Path(log_file), level=self.loglevel or "INFO", whole_process=whole_process)
        self._logging_set_up = True
        self._reports_itself = not whole_process
        log.info("log file: %s", self.log_file)

    def _set_up_logging(self) -> None:
        if self._logging_set_up or self.loglevel is None:
            return
        self.log_to(self.log_file or default_log_file(self.config))

    def _report_failure(self, error: BaseException) -> None:
        if self._reports_itself:
            logging.getLogger("deltastreams.failure").error("%s", say_failure(error, self.log_file))

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, *, until_caught_up: bool = False) -> None:
        """Start the application. ``until_caught_up``: this start is a :meth:`run` until caught
        up's, so if the driver's own triggers consume the input before an embedded Spark session
        is up, the start ends there and the query is never started (the run then ends at once)."""
        self._set_up_logging()
        use_system_pool()
        self._failed = False
        self._lifecycle.to(AppState.REBALANCING)
        try:
            self._serve_metrics()
            self._start(until_caught_up=until_caught_up)
        except BaseException as e:
            self._lifecycle.to(AppState.PENDING_ERROR)
            self._stop_heartbeat()  # a failed start holds nothing alive
            self._stop_metrics()
            self._lifecycle.to(AppState.ERROR)
            if isinstance(e, Exception):
                self._report_failure(e)
            raise
        self._lifecycle.to(AppState.RUNNING)

    def _serve_metrics(self) -> None:
        """First thing at start: a port in use fails the start before Spark does any work."""
        if not self.config.metrics_port or self.metrics is not None:
            return
        endpoint = MetricsEndpoint(
            self.config.application_id,
            (sub.id for sub in self.topology.subtopologies),
            port=self.config.metrics_port,
            address=self.config.metrics_address,
            state=lambda: self.state,
        )
        endpoint.start()
        self.metrics = endpoint
        self.progress.on_batch(endpoint.batch_done)

    def _stop_metrics(self) -> None:
        metrics, self.metrics = self.metrics, None
        if metrics is not None:
            metrics.stop()
            self.progress.remove_listener(metrics.batch_done)

    def _start(self, *, until_caught_up: bool) -> None:
        phases = Phases()
        master = embedded_master(self.config) if self.spark is None else None
        if master is not None:  # the task hosts' imports, meanwhile (see _session_start)
            prepare_task_hosts(self.config, log_file=self.log_file)
        with phases.time("check"):
            require_reachable(self.config.root)
            require_no_rescale(self.config.root, self.config.application_id)
            require_no_reset(self.config.root, self.config.application_id)
            if self.config.exactly_once and is_object_store(self.config.root):
                # Local filesystems get exclusive commits from delta-rs' rename-without-replace;
                # an object store only if it honours If-None-Match.
                require_exclusive_commits(self.config.root)
            self._check_sources()
            topology_records = check_topology_upgrade(self.topology, self.config)
            in_kafka = frozenset(self.kafka.topics) if self.kafka is not None else frozenset()
            compiled = {sub.id: compile_subtopology(self.topology, sub, kafka_topics=in_kafka) for sub in self.topology.subtopologies}
        session = self._session_start(phases, master)
        shipped = ShippedTopology.of(for_executors(self.topology))
        settings = BatchSettings(
            application_id=self.config.application_id,
            state_dir=os.path.abspath(self.config.local_state_dir),
            caching=self.config.caching,
            fail_on_bad_record=self.config.on_bad_record.value == "fail",
            late_records_topic=self.config.late_records_topic,
            dead_letter_topic=self.config.dlq_topic,
            idle_close=self.config.idle_close_ms is not None,
            storage_options=dict(self.config.storage_options),
            state_under_tmp=self.config.state_under_tmp,
        )
        hosts_here = not session.ready()  # the driver starts the task hosts itself (local mode)
        hosts = self._warm_up_hosts(settings, shipped, session, from_driver=hosts_here)
        self.committer = Committer(self.registry)
        self._start_heartbeat()  # before registering: a holder is never without one
        with phases.time("recover"):
            self.committer.recover(self.topology.subtopologies)  # first: rolling forward publishes
            keep_records(self.committer, topology_records)
        self.heartbeat.beat()  # now with the epochs it holds
        with phases.time("register"):
            self.registry.register()
        self.kafka_mirror = KafkaMirror(self.config, self.topology, self.registry) if self.config.kafka.sink_topics else None
        if self.kafka_mirror is not None:
            with phases.time("kafka"):
                self.kafka_mirror.start(self.committer.log_uri)
        uris = {t: self.registry.uri(t) for t in self.topology.source_topics if self.kafka is None or t not in self.kafka}
        with phases.time("inputs"):
            inputs = self._input_log(uris)
        planner = Planner(self.topology, self.registry, inputs, settings, shipped, {s: c.entry for s, c in compiled.items()}, self.kafka)
        consumers = {t: s.id for s in self.topology.subtopologies for t in s.source_topics if t in self.topology.internal_topics and t not in self.topology.cycle_topics}
        job = TriggerJob(
            session, self.topology, compiled, consumers, self._host_idle_timeout_s, self.config.single_task_records,
            sticky_tasks=self.config.sticky_tasks, standby_replicas=self.config.num_standby_replicas,
        )  # fmt: skip
        if hosts_here:
            job.start_hosts_here = functools.partial(task_host.start_here, idle_timeout_s=self._host_idle_timeout_s, log_file=self.log_file)
        self.trigger = Trigger(
            planner, job, self.committer, self.registry, self.progress, poll_interval_s=self._poll_interval_s,
            commit_interval_s=self.config.commit_interval.total_seconds(), idle_clock=self._idle_clock(),
            kafka_mirror=self.kafka_mirror, stop_on_bad_input=self._stop_on_bad_input if self._fails_on_bad_input else None,
        )
        if self.config.retention.enabled:
            self.retention = Retention(self.config.retention, self.topology, self.registry, self.committer, self.trigger.commit_lock)
        if self.metrics is not None:
            partitions = {t: self.registry.partitions(t) for t in uris}
            self.metrics.watch_inputs(InputView(uris, self.trigger.watcher.latest, self.trigger.consumed, partitions))
            if self.retention is not None:
                self.metrics.watch_retention(self.retention.totals)
        # An input log cleaned past a position fails now, in the application's words, rather than
        # in the query's first batch (docs/retention.md, "Readers behind the log").
        inputs.require_positions(self.trigger.consumed, self.trigger.watcher.latest())
        # Retention from the first trigger on, not from the query's start: triggers run before the
        # session is up (4-6 s under load), and a run that caught up in that time never ran a
        # retention step but the purge at stop (the crash harness's retention kill points went
        # unreached). Its steps commit under the trigger's commit lock, whoever runs the trigger.
        if self.retention is not None:
            self.retention.start()
        # A crash between two sub-topologies' commits leaves repartition records committed but
        # not consumed: process them before new input arrives (no trigger would come for them).
        if session.ready():
            with phases.time("backlog"):
                self.trigger.run({})
        else:
            self._caught_up_before_query = self._run_while_session_starts(session, hosts, phases, until_caught_up=until_caught_up)
            if self._caught_up_before_query is not None:
                # Nothing left for the query to do: a run until caught up ends without waiting
                # seconds for a JVM it would only stop (docs/applications.md).
                session.abandon()
                self._abandoned_start = session
                log.info("application %s caught up in %.1f s, before its Spark session was up: the query was not started (%s)",
                         self.config.application_id, sum(phases.values()), phases.describe())
                return
        self.spark = session.get()
        with phases.time("query"):
            self._start_query()
        log.info("application %s started in %.1f s (%s)", self.config.application_id, sum(phases.values()), phases.describe())

    @property
    def _fails_on_bad_input(self) -> bool:
        return self.config.on_bad_record is BadRecordPolicy.FAIL

    def _input_log(self, uris: dict[str, str]) -> InputLog:
        """The input topics' log reader: their schemas checked against what the topology reads
        (:mod:`deltastreams.streams._internal.runtime.input_schema`), the skips the transaction logs hold,
        and, under ``on_bad_record = "fail"``, the stop before bad input."""
        external = {t: uri for t, uri in uris.items() if t not in self.topology.internal_topics}
        layouts = {t: self.registry.layout(t) for t in external}
        added = AddedColumns()
        for topic, uri in external.items():
            position = min(self.committer.position(s.id, topic) for s in self.topology.subtopologies if topic in s.source_topics)
            check_at_start(topic, uri, layouts[topic], position, added)
        skips = Skips.from_properties({sub: txlog.property(SKIPS) for sub, txlog in self.committer.logs.items()})
        stop = None
        if self._fails_on_bad_input:
            stop = lambda topic, r: stop_error(self.config.root, self.config.application_id, topic, uris[topic], r.version, r.path, r.reason)  # noqa: E731
        return InputLog(uris, self.config.max_records_per_batch, layouts=layouts, skips=skips, stop=stop, added_columns=added)

    def _stop_on_bad_input(self, bad: BadInputReport) -> Exception:
        return stop_error(self.config.root, self.config.application_id, bad.topic, self.registry.uri(bad.topic), bad.version, bad.path, bad.reason)

    def _session_start(self, phases: Phases, master: str | None) -> SessionStart:
        """The session given, or the one this application starts: embedded (``master``), on a
        thread of its own while the driver recovers and runs its first triggers
        (:mod:`deltastreams.streams._internal.spark.session_start`); else (spark-submit, a cluster)
        here and now."""
        if self.spark is not None:
            return SessionStart.given(self.spark)
        if master is not None:
            return SessionStart(lambda: spark_session(self.config, log_file=self.log_file), master=master)
        with phases.time("session"):
            self.spark = spark_session(self.config, log_file=self.log_file)
        return SessionStart.given(self.spark)

    def _run_while_session_starts(self, session: SessionStart, hosts: threading.Thread, phases: Phases, *, until_caught_up: bool) -> dict | None:
        """Triggers run by the driver itself until the session is up (the first is also the
        repartition backlog's): in local mode the hosts do a trigger's work whoever relays it (the
        driver calls them itself for small triggers anyway), so a job's first results need not
        wait for the JVM. Once the hosts are up
        (started from here, :meth:`_warm_up_hosts`), and as long as the session takes (the
        ``session`` phase: what is left of its start, early triggers included).
        ``until_caught_up``: returns the input's ends (:meth:`_input_ends`, as of the first
        trigger) once they are consumed, if that is before the session is up; else None."""
        with phases.time("hosts"):
            hosts.join()
        try:
            targets = self._input_ends() if until_caught_up else None
            with phases.time("backlog"):
                self.trigger.run_before_query()
            with phases.time("session"):
                while not session.ready():
                    if self.trigger.input_pending():
                        self.trigger.run_before_query()
                    elif targets is not None and self.caught_up(targets):
                        return targets
                    else:
                        session.wait(self._poll_interval_s)
        except Exception as e:  # said as a failed batch of the query would be (_check_query)
            details = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
            # Our own errors say what to do (bad input names the skip command): kept as they are.
            failure = Failure(str(e), e.action) if isinstance(e, DeltaStreamsError) and getattr(e, "action", None) else explain(details)
            raise ApplicationFailedError(self.config.application_id, failure, details) from None
        log.debug("Spark session started in %.1f s, in the background", session.seconds)
        return None

    def _idle_clock(self) -> IdleClock | None:
        """Idle close (off unless ``idle_close_ms`` is set): every task of a sub-topology that
        closes windows or buffered results with stream time, anchored at this start."""
        if self.config.idle_close_ms is None:
            return None
        tasks = [(sub.id, p) for sub in self.topology.subtopologies if keeps_time(self.topology, sub) for p in range(self.registry.tasks(sub))]
        return IdleClock(self.config.idle_close_ms, tasks, int(time.time() * 1000))

    @property
    def _poll_interval_s(self) -> float:
        """How often the driver looks for new input: often enough not to add latency."""
        return min(0.1, self.config.commit_interval.total_seconds() / 2)

    @property
    def _query_poll_ms(self) -> int:
        """How often the query looks for a tick. The trigger keeps the commit interval itself
        (:meth:`Trigger._wait_for_interval`): Spark's processing-time trigger would wait for the
        next multiple of the whole interval after a trigger ends. A quarter of the interval
        (10-100 ms) loses little after a trigger, while an idle query stays cheap: at 0, Spark
        looks every 10 ms and its JVM burnt ~0.3 core doing nothing."""
        return max(10, min(100, self.config.commit_interval_ms // 4))

    @property
    def _host_idle_timeout_s(self) -> float:
        return max(60.0, 20 * self.config.commit_interval.total_seconds())

    def _warm_up_hosts(self, settings: BatchSettings, shipped: ShippedTopology, session: SessionStart, *, from_driver: bool) -> threading.Thread:
        """Start every task's host (imports, topology) in the background while the application
        registers and recovers: otherwise the first trigger pays for it. ``from_driver`` (the
        session still starts, so local mode: this machine is the executor's): the driver starts
        them itself; otherwise a Spark job does, on the executors."""
        tasks = [f"{sub.id}_{p}" for sub in self.topology.subtopologies for p in range(self.registry.tasks(sub))]
        idle = self._host_idle_timeout_s

        def here() -> None:
            names = [task_host.host_name(settings.local_state_dir(), settings.application_id, task) for task in tasks]
            task_host.start_here(names, idle, log_file=self.log_file)
            for name in names:
                task_host.call(name, ("ping", shipped), idle_timeout_s=idle, start=False)

        def from_spark() -> None:
            sc = session.get().sparkContext
            sc.parallelize(tasks, len(tasks)).foreach(lambda task: _ping_host(settings, shipped, task, idle))

        def warm() -> None:
            try:
                (here if from_driver else from_spark)()
            except Exception:  # noqa: BLE001 - only a head start; the first trigger starts them anyway
                log.debug("task host warm-up failed", exc_info=True)

        thread = threading.Thread(target=warm, name="deltastreams-warm-up", daemon=True)
        thread.start()
        return thread

    def _check_sources(self) -> None:
        self._check_kafka_topics()
        for node in self.topology.nodes.values():
            if not isinstance(node, SourceNode) or node.internal:
                continue
            for topic in node.topics:
                if self.kafka is not None and topic in self.kafka:
                    self.kafka.partitions(topic)  # it exists (a clear error otherwise)
                    continue
                physical = self.registry.physical(topic)
                if not Topic.exists(self.config.root, physical):
                    if root_has_topics(self.config.root):
                        why = f" under {self.config.root}/topics; create it (or generate data) first"
                    else:  # a mistyped root, most likely
                        why = (f": there is no deltastreams root at {self.config.root} (nothing was ever generated or run there); "
                               "check the root, or create the topic (or generate data) first")
                    raise TopicNotFoundError(f"source topic '{topic}' does not exist{why}", topic=topic)
                layout = Topic.open(self.config.root, physical).layout
                check_expected_types(topic, layout, node.key_type, node.value_type)
                if node.value_format is not None:
                    check_encoded_values(topic, layout, type(node.value_format).__name__)
        self._check_copartitioning()

    def _check_kafka_topics(self) -> None:
        kafka = self.config.kafka
        external = {t for node in self.topology.nodes.values() if isinstance(node, SourceNode) and not node.internal for t in node.topics}
        unknown = [t for t in kafka.source_topics if t not in external]
        if unknown:
            raise ConfigError(
                f"kafka.source_topics names {unknown}, which no source of the topology reads (its input topics: {sorted(external)})",
                setting="kafka.source_topics",
            )
        sinks = {t for sub in self.topology.subtopologies for t in sub.sink_topics} - set(self.topology.internal_topics)
        unknown_sinks = [t for t in kafka.sink_topics if t not in sinks]
        if unknown_sinks:
            raise ConfigError(
                f"kafka.sink_topics names {unknown_sinks}, which the topology does not write (its output topics: {sorted(sinks)})",
                setting="kafka.sink_topics",
            )
        global_topics = {t for sub in self.topology.subtopologies for t in sub.global_topics}
        if self.kafka is not None and global_topics & set(self.kafka.topics):
            raise ConfigError(
                f"global tables cannot be read from Kafka yet ({sorted(global_topics & set(self.kafka.topics))}): keep them in Delta topics",
                setting="kafka.source_topics",
            )

    def _check_copartitioning(self) -> None:
        """A join reads its stream and its table partition by partition (a cogroup its input
        streams), so all must have as many partitions, as Kafka checks at start (a record and its table row are then in the
        same task, both partitioned by key with the same partitioner)."""
        for sub in self.topology.subtopologies:
            if not any(isinstance(self.topology.nodes[n], _JOINS) for n in sub.nodes):
                continue
            counts = {topic: self.registry.partitions(topic) for topic in sub.partitioned_topics}
            if len(set(counts.values())) > 1:
                listed = ", ".join(f"{topic}: {n}" for topic, n in counts.items())
                raise TopologyError(
                    f"topics joined or cogrouped in sub-topology {sub.id} are not co-partitioned ({listed}): a join or cogroup needs "
                    "the same number of partitions on every side; recreate one of them (or, for a repartition topic, set num_partitions to match)"
                )

    def _start_query(self) -> None:
        parent = Path(self.config.local_state_dir).absolute() / self.config.application_id / "checkpoints"
        self.checkpoint = fresh_checkpoint(parent, self.committer.instance, replacing=self.checkpoint)
        frame = self.spark.readStream.format("socket").option("host", "127.0.0.1").option("port", self.trigger.ticks.port).load()
        self.query = (
            frame.writeStream.foreachBatch(self.trigger)
            .trigger(processingTime=f"{self._query_poll_ms} milliseconds")
            .option("checkpointLocation", self.checkpoint)
            .queryName(self.config.application_id)
            .start()
        )
        deadline = time.monotonic() + 60
        while not self.trigger.ticks.connected and self.query.isActive and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.trigger.watcher.is_alive():
            self.trigger.watcher.start()
        if self.trigger.watcher.pending():
            self.trigger.ticks.tick()
        log.info("query started: %d sub-topologies, %d tasks", len(self.topology.subtopologies), sum(self.registry.tasks(s) for s in self.topology.subtopologies))

    def stop(self, *, graceful_timeout_s: float = 60.0) -> None:
        """Stop between triggers: no new trigger starts, the running one finishes and Spark
        records it, then the query stops and the task hosts on this machine exit."""
        stopping = self._lifecycle.to(AppState.PENDING_ERROR if self._failed else AppState.PENDING_SHUTDOWN)
        try:
            self._stop(graceful_timeout_s)
        finally:
            self._stop_metrics()
            if stopping:
                self._lifecycle.to(AppState.ERROR if self._failed else AppState.NOT_RUNNING)

    def _stop(self, graceful_timeout_s: float) -> None:
        if self.retention is not None:
            self.retention.stop()
        if self.trigger is not None:
            self.trigger.watcher.stop()
            self.trigger.stopping = True
        query, self.query = self.query, None
        if self.trigger is not None:
            with self.trigger.in_batch:  # waits for the trigger in flight, if any
                pass
            self._purge_once_more()
        if query is not None:
            deadline = time.monotonic() + graceful_timeout_s
            while query.isActive and _last_recorded_batch(query) < self.trigger.last_batch_id and time.monotonic() < deadline:
                time.sleep(0.02)
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - stopping is best effort; progress is in the transaction logs
                log.debug("stopping the query failed", exc_info=True)
        if self.trigger is not None:
            self.trigger.ticks.close()
            self.trigger.close()
            self._stop_hosts()
        if self.kafka_mirror is not None:
            self.kafka_mirror.close()
        if self.kafka is not None:
            self.kafka.close()
            from deltastreams.sinks.kafka import close_readers  # here: Kafka's modules cost start-up to import

            close_readers()  # the driver's own reads' consumers; each task host closes its own as it exits
        self._stop_heartbeat()
        self.progress.finish()

    def _start_heartbeat(self) -> None:
        committer = self.committer
        self.heartbeat = Heartbeat(
            self.config.root, self.config.application_id, committer.instance, lambda: {sub: txlog.epoch for sub, txlog in list(committer.logs.items())}
        )
        self.heartbeat.start()

    def _stop_heartbeat(self) -> None:
        """Marks this instance stopped (``status`` then says so, and ``reset`` may go ahead)."""
        if self.heartbeat is not None:
            self.heartbeat.stop()

    def close_spark(self, *, exiting: bool = False) -> None:
        """Stop the Spark session if this application started it (the command line does, at
        exit), so the process ends with Spark shut down in order rather than torn down by the
        interpreter's exit; also one whose start a run caught up before (waited for, unless
        ``exiting``: the process ends next, and a JVM still launching is killed)."""
        if self._owns_spark and self.spark is not None:
            try:
                self.spark.stop()
            except Exception:  # noqa: BLE001 - the process is exiting anyway
                log.debug("stopping the Spark session failed", exc_info=True)
            self.spark = None
        abandoned, self._abandoned_start = self._abandoned_start, None
        if abandoned is not None:
            abandoned.end(kill_launch=exiting)

    def _purge_once_more(self) -> None:
        # Records consumed since the last purge interval go now, as Kafka Streams deletes them
        # after its last commit: a run that stops (or catches up) between two intervals would
        # otherwise leave them for the next start.
        if self.retention is None:
            return
        try:
            self.retention.purge()
        except Exception:  # noqa: BLE001 - the next start purges them; stopping must not fail for it
            log.warning("the last purge before stopping failed; the next start does it", exc_info=True)

    def _stop_hosts(self) -> None:
        """Task hosts on this machine (all of them in local mode) exit now, closing their
        stores; on a cluster the others exit when idle."""
        state_dir = os.path.abspath(self.config.local_state_dir)
        names = [
            task_host.host_name(state_dir, self.config.application_id, f"{sub.id}_{p}")
            for sub in self.topology.subtopologies
            for p in range(self.registry.tasks(sub))
        ]
        task_host.stop_hosts(names)

    def __enter__(self) -> StreamsApp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- running ------------------------------------------------------------------------------

    def _check_query(self) -> None:
        error = self.query.exception() if self.query is not None else None
        if error is None or self.trigger.stopping:
            return
        details = str(error)
        cause = root_cause(details)
        if "checkpoint" in cause.lower() and self._checkpoint_restarts < _CHECKPOINT_RESTARTS:
            # Spark's checkpoint is only a cache: start over from the transaction logs.
            self._checkpoint_restarts += 1
            log.warning("Spark's checkpoint %s is unusable (%s); restarting the query with a new one", self.checkpoint, cause)
            self._start_query()
            return
        self._failed = True
        self.stop()
        log.debug("application %s failed:\n%s", self.config.application_id, details)
        ours = self.trigger.failure
        failure = Failure(str(ours), ours.action) if ours is not None and getattr(ours, "action", None) else explain(details)
        raise ApplicationFailedError(self.config.application_id, failure, details) from None

    def _input_ends(self) -> dict[str, int]:
        """Per source topic, where its input ends now (a Kafka topic's latest offsets, a Delta
        topic's version): what :meth:`caught_up` compares positions with."""
        return {
            t: self.kafka.latest(t) if self.kafka is not None and t in self.kafka else Topic.open(self.config.root, self.registry.physical(t)).version()
            for t in self.topology.source_topics
        }

    def caught_up(self, targets: dict[str, int]) -> bool:
        """Every sub-topology has consumed its input topics up to ``targets`` and every
        repartition topic up to where its upstream wrote it."""
        for sub in self.topology.subtopologies:
            for topic in sub.source_topics:
                position = self.committer.position(sub.id, topic)
                if self.kafka is not None and topic in self.kafka:
                    if self.kafka.has_new(topic, targets[topic], position):
                        return False
                    continue
                if topic in self.topology.internal_topics:
                    target = self.registry.version(topic)
                else:
                    target = targets.get(topic, -1)
                if position < target:
                    return False
        return True

    def run(self, *, until_caught_up: bool = False, timeout_s: float | None = None) -> None:
        """Start (if needed) and run until stopped, failed, caught up (if asked) or timed out."""
        if self.trigger is None:
            self.start(until_caught_up=until_caught_up)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        targets = self._caught_up_before_query or self._input_ends()
        try:
            while True:
                self._check_query()
                if until_caught_up and self.caught_up(targets):
                    break
                if deadline is not None and time.monotonic() > deadline:
                    if until_caught_up:
                        raise DeltaStreamsError(f"not caught up after {timeout_s} s")
                    break
                time.sleep(0.05)
        except Exception as e:
            self._report_failure(e)
            raise
        finally:
            self.stop()
        if self._reports_itself:
            log.info("%s", self.progress.summary())


def _last_recorded_batch(query) -> int:
    """Id of the last batch Spark recorded as done (progress is posted after its commit log)."""
    progress = query.lastProgress
    return -1 if progress is None else int(progress["batchId"])


def _ping_host(settings: BatchSettings, shipped: ShippedTopology, task: str, idle_timeout_s: float) -> None:
    name = task_host.host_name(settings.local_state_dir(), settings.application_id, task)
    task_host.call(name, ("ping", shipped), idle_timeout_s=idle_timeout_s)
