"""StreamsApp: run a topology on Spark, one Structured Streaming query per sub-topology.

    app = StreamsApp(topology, StreamsConfig.load({"application_id": "pageviews", "root": "/data"}))
    app.run(until_caught_up=True)     # or: app.start(); ...; app.stop()

Each query reads its source topic by Delta versions, runs one task per source partition, and
commits each micro-batch (every ``commit_interval_ms``). Spark checkpoints live under
``<root>/checkpoints/<application_id>/``: one per sub-topology under at_least_once; under
exactly_once one per instance and sub-topology (named by its epoch; the two newest are kept),
progress being in the transaction logs. Output topics whose types the topology fixes are created
at start, so all queries start together; the others start once their source topic exists.
``until_caught_up`` stops every query once it has consumed all input present at start (for
downstream queries: all their upstream wrote).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

from conf import StreamsConfig
from sinks.topics import Topic, check_expected_types
from streams._internal.runtime.commit import AtLeastOnceCommitter, ExactlyOnceCommitter
from streams._internal.runtime.dry_run import create_typed_topics
from streams._internal.runtime.progress import Progress, query_listener
from streams._internal.runtime.runner import SubtopologyRunner
from streams._internal.runtime.spark import spark_session
from streams._internal.runtime.topics import TopicRegistry
from conf.errors import DeltaStreamsError, TopicNotFoundError
from topology.compile import compile_subtopology, for_executors
from topology.graph import SubTopology, Topology
from topology.nodes import SourceNode

log = logging.getLogger("deltastreams")
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.*)$")


def root_cause(error: BaseException) -> str:
    """The last 'SomethingError: message' line of an error that crossed Spark (Py4J, Python
    workers), so users see our message rather than a JVM stack trace."""
    text = str(error)
    found = [m for m in (_ERROR_LINE.match(line.strip()) for line in text.splitlines()) if m]
    ours = [m for m in found if m.group(1) not in ("Py4JJavaError", "PythonException", "StreamingQueryException", "SparkException")]
    if ours:
        return f"{ours[-1].group(1)}: {ours[-1].group(2)}"
    return text.splitlines()[0] if text else type(error).__name__


def _import_task_modules(_: int) -> int:
    import streams._internal.runtime.task_runner  # noqa: F401 - pulls in pyarrow, deltalake, rocksdict

    return 0


class StreamsApp:
    def __init__(self, topology: Topology, config: StreamsConfig, *, spark=None) -> None:
        self.topology = topology
        self.config = config
        self.spark = spark
        self.registry = TopicRegistry(config, topology)
        self.progress = Progress()
        self.committer = None
        self.runners: dict[int, SubtopologyRunner] = {}
        self.queries: dict[int, object] = {}
        self._listener = None

    # -- lifecycle ----------------------------------------------------------------------------

    def checkpoint(self, sub: SubTopology) -> str:
        return self.committer.checkpoint_dir(sub.id)

    def start(self) -> None:
        self._check_sources()
        compiled = {sub.id: compile_subtopology(self.topology, sub) for sub in self.topology.subtopologies}
        if self.spark is None:
            self.spark = spark_session(self.config)
        self.committer = self._committer()
        self.committer.recover(self.topology.subtopologies)  # before reading offsets: it may publish
        self.registry.register_outputs()
        self._warm_up_workers()
        create_typed_topics(self.topology, self.registry, for_executors(self.topology))
        self._listener = query_listener()
        self.spark.streams.addListener(self._listener)
        self.runners = {sid: SubtopologyRunner(self, c) for sid, c in compiled.items()}
        self._start_ready_queries()

    def _warm_up_workers(self) -> None:
        """Start the executors' Python workers and their imports in the background while the
        queries start: otherwise the first micro-batch pays several seconds for it."""
        sc = self.spark.sparkContext
        slots = sc.defaultParallelism

        def warm() -> None:
            try:
                sc.parallelize(range(slots), slots).map(_import_task_modules).collect()
            except Exception:  # noqa: BLE001 - only a head start; the first batch does it anyway
                log.debug("worker warm-up failed", exc_info=True)

        threading.Thread(target=warm, name="deltastreams-warm-up", daemon=True).start()

    def _committer(self):
        if self.config.exactly_once:
            return ExactlyOnceCommitter(self.registry)
        return AtLeastOnceCommitter(self.registry)

    def _check_sources(self) -> None:
        for node in self.topology.nodes.values():
            if not isinstance(node, SourceNode) or node.internal:
                continue
            for topic in node.topics:
                physical = self.registry.physical(topic)
                if not Topic.exists(self.config.root, physical):
                    raise TopicNotFoundError(
                        f"source topic '{topic}' does not exist under {self.config.root}/topics; create it (or generate data) first",
                        topic=topic,
                    )
                check_expected_types(topic, Topic.open(self.config.root, physical).layout, node.key_type, node.value_type)

    def _start_ready_queries(self) -> None:
        for sub in self.topology.subtopologies:
            if sub.id in self.queries:
                continue
            runner = self.runners[sub.id]
            if not self.registry.exists(runner.compiled.source_topic):
                continue
            source = self.registry.source_target(runner.compiled.source_topic)
            runner.start_version = self.committer.start_version(sub.id)
            frame = (
                self.spark.readStream.format("deltastreams")
                .option("uri", source.uri)
                .option("partitions", source.partitions)
                .option("max_records", self.config.max_records_per_batch)
                .option("start_version", runner.start_version)
                .load()
            )
            self.queries[sub.id] = (
                frame.writeStream.foreachBatch(runner)
                .trigger(processingTime=f"{self.config.commit_interval_ms} milliseconds")
                .option("checkpointLocation", self.checkpoint(sub))
                .queryName(f"{self.config.application_id}-subtopology-{sub.id}")
                .start()
            )
            log.info("sub-topology %d started (%s mode, %d tasks)", sub.id, runner.compiled.mode, runner.tasks)

    def stop(self, *, graceful_timeout_s: float = 60.0) -> None:
        """Stop between micro-batches: no new batch starts, the running one finishes and Spark
        records it, then the queries stop. A clean stop thus never leaves a batch half done
        (which at-least-once would replay)."""
        deadline = time.monotonic() + graceful_timeout_s
        for runner in self.runners.values():
            runner.stopping = True
        ids = []
        for sub_id, query in self.queries.items():
            ids.append(str(query.id))
            runner = self.runners[sub_id]
            with runner.in_batch:  # waits for the batch in flight, if any
                pass
            while query.isActive and self._last_committed_batch(query) < runner.last_batch_id and time.monotonic() < deadline:
                time.sleep(0.02)
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - stopping is best effort; the checkpoint is consistent
                log.debug("stopping a query failed", exc_info=True)
        self.queries.clear()
        if self._listener is not None and self.spark is not None:
            # Spark delivers listener events asynchronously: remove the listener only once it has
            # seen every query end, or a late event would call back into a closed Python side.
            wait_until = time.monotonic() + 5
            while not set(ids) <= self._listener.terminated and time.monotonic() < wait_until:
                time.sleep(0.05)
            self.spark.streams.removeListener(self._listener)
            self._listener = None
        self.progress.finish()

    def __enter__(self) -> StreamsApp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- running ------------------------------------------------------------------------------

    @staticmethod
    def _last_committed_batch(query) -> int:
        """Id of the last batch Spark recorded as done (progress is posted after its commit log)."""
        progress = query.lastProgress
        return -1 if progress is None else int(progress["batchId"])

    def consumed_version(self, sub_id: int) -> int:
        """Source version the sub-topology's query has committed up to (-1: none)."""
        query = self.queries.get(sub_id)
        if query is None or query.lastProgress is None:
            return -1
        for progress in reversed(query.recentProgress):
            sources = progress["sources"] if isinstance(progress, dict) else progress.sources
            if not sources:
                continue
            end = sources[0]["endOffset"] if isinstance(sources[0], dict) else sources[0].endOffset
            if end:
                return int((json.loads(end) if isinstance(end, str) else end)["version"])
        return -1

    def _raise_failures(self) -> None:
        for sub_id, query in self.queries.items():
            error = query.exception()
            if error is not None and not self.runners[sub_id].stopping:
                self.stop()
                raise DeltaStreamsError(f"sub-topology {sub_id} failed: {root_cause(error)}") from None

    def run(self, *, until_caught_up: bool = False, timeout_s: float | None = None) -> None:
        """Start (if needed) and run until stopped, failed, caught up (if asked) or timed out."""
        if not self.runners:
            self.start()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        targets: dict[int, int | None] = {}
        for sub in self.topology.subtopologies:
            topic = self.runners[sub.id].compiled.source_topic
            targets[sub.id] = None if topic in self.topology.internal_topics else Topic.open(self.config.root, self.registry.physical(topic)).version()
        done: set[int] = set()
        try:
            while True:
                self._raise_failures()
                self._start_ready_queries()
                if until_caught_up:
                    self._advance_targets(targets, done)
                    if len(done) == len(targets):
                        return
                if deadline is not None and time.monotonic() > deadline:
                    if until_caught_up:
                        raise DeltaStreamsError(f"not caught up after {timeout_s} s (done: sub-topologies {sorted(done)})")
                    return
                time.sleep(0.1)
        finally:
            self.stop()

    def _advance_targets(self, targets: dict[int, int | None], done: set[int]) -> None:
        for sub in self.topology.subtopologies:
            if sub.id in done:
                continue
            topic = self.runners[sub.id].compiled.source_topic
            if targets[sub.id] is None:
                upstream = [s.id for s in self.topology.subtopologies if topic in s.sink_topics]
                if not all(u in done for u in upstream):
                    continue
                if not self.registry.exists(topic):
                    done.add(sub.id)  # the upstream never wrote anything
                    continue
                targets[sub.id] = Topic.open(self.config.root, self.registry.physical(topic)).version()
            if self.consumed_version(sub.id) >= targets[sub.id]:
                done.add(sub.id)
