"""Committing a sub-topology's micro-batch: exactly-once or at-least-once, as a strategy of one
committer (docs/exactly-once.md).

A trigger commits its sub-topologies one after another, upstream first. For each, in order:

1. **Consolidate** (driver): every output partition gets one dense run of offsets (a partition
   written by several tasks, or by an earlier sub-topology in the same trigger, is renumbered);
   topics first written by this batch are created from the most complete writer's types.
2. **Decide** (exactly_once only): one exclusive commit to the sub-topology's transaction log
   naming every file and the source positions: the point of no return. It fails if another
   instance registered since (``ProducerFencedError``).
3. **Publish**: every output table gets its files in one commit; under exactly_once tagged
   ``txn(<app>/subtopology-<n>, seq)`` and skipped where the table already has it.
4. **Record progress** (at_least_once only): the same entry, written after publication, so a crash
   in between replays the batch (duplicates, by definition of the guarantee).

Both guarantees keep the sub-topology's source positions in its transaction log, so a restart
resumes there whatever Spark's checkpoint says. Only exactly_once registers epochs that fence, and
rolls the last decided batch forward at start.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import BatchTimedOutError
from deltastreams.sinks import DataFile, KnownVersion, append_at, checkpoint_if_due, commit_files, open_table, under_root
from deltastreams.sinks.transaction import DecidedBatch, TablePublication, TransactionLog
from deltastreams.streams._internal.runtime.consolidate import consolidate
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams._internal.runtime.plan import WrittenFile
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.streams._internal.runtime.timing import Phases
from deltastreams.topology.graph import SubTopology

log = logging.getLogger("deltastreams")


@dataclass
class Published:
    files: dict[str, list[DataFile]] = field(default_factory=dict)
    seconds: float = 0.0
    phases: Phases = field(default_factory=Phases)


class ExactlyOnce:
    """Register an epoch (fencing older instances) and roll the last decided batch forward at
    start; per batch, decide (the point of no return), then publish under ``txn`` tags."""

    exactly_once = True

    def __init__(self, registry: TopicRegistry, instance: str) -> None:
        self.registry = registry
        self.instance = instance

    def recover(self, txlog: TransactionLog) -> DecidedBatch | None:
        txlog.register(self.instance)
        last = txlog.last_decided()
        if last is not None and last.exactly_once:  # an instance may have died while publishing it
            txlog.publish(last, lambda topic, uri: open_table(uri), self._said_rolled_forward(last))
        return last

    def _said_rolled_forward(self, batch: DecidedBatch):
        """Dead letters published by a roll-forward are said, as a batch's own publication says them."""
        dlq = self.registry.config.dlq_topic

        def on_published(topic: str, version: int) -> None:
            if topic == dlq:
                records = sum(max(f.num_records, 0) for f in batch.tables[topic].files)
                log.warning("batch %d, decided before the last stop, published now: %d records went to the dead-letter topic %s", batch.seq, records, dlq)

        return on_published

    def complete(self, txlog: TransactionLog, batch: DecidedBatch, phases: Phases) -> None:
        with phases.time("decide"):
            txlog.decide(batch)
        crash_point("after_commit")
        # Table by table (in parallel), idempotently: a restart rolls the rest forward.
        with phases.time("publish"):
            txlog.publish(
                batch, lambda topic, uri: self.registry.delta_table(topic), self._on_published(batch),
                known_versions={t: KnownVersion(self.registry.version(t), self.registry.checkpoint_interval(t)) for t in batch.tables},
            )

    def _on_published(self, batch: DecidedBatch):
        count = 0

        def on_published(topic: str, version: int) -> None:
            nonlocal count
            self.registry.committed(topic, version, batch.tables[topic].files)
            count += 1
            if count == 1:
                crash_point("during_publication")

        return on_published


def append_after(registry: TopicRegistry, topic: str, files) -> int:
    """An untagged append right after the version this application last wrote (one conditional
    write); if the topic changed since, through the loading path, which names the other writer.
    The registry learns the new version before the checkpoint loads the table: the table is then
    one version ahead of what the registry knew, which it would take for another writer's."""
    version = append_at(registry.uri(topic), registry.version(topic), files)
    if version is None:
        table = registry.delta_table(topic)
        version = commit_files(table, files, schema=registry.layout(topic).table_schema(), exclusive=True)
        registry.committed(topic, version, files)
        return version
    registry.committed(topic, version, files)
    checkpoint_if_due(version, registry.checkpoint_interval(topic), lambda: registry.delta_table(topic))
    return version


class AtLeastOnce:
    """No epochs, no fencing; per batch, publish without ``txn`` tags, then record the progress:
    a crash in between replays the batch (duplicates, by definition of the guarantee)."""

    exactly_once = False

    def __init__(self, registry: TopicRegistry, instance: str) -> None:
        self.registry = registry
        self.instance = instance

    def recover(self, txlog: TransactionLog) -> DecidedBatch | None:
        return txlog.last_decided()

    def complete(self, txlog: TransactionLog, batch: DecidedBatch, phases: Phases) -> None:
        with phases.time("publish"):
            for count, (topic, publication) in enumerate(batch.tables.items()):
                if not publication.files:
                    continue
                append_after(self.registry, topic, publication.files)
                if count == 0:
                    crash_point("during_publication")
        with phases.time("decide"):
            txlog.decide(batch)


def transaction_log_uri(config: StreamsConfig, subtopology: int) -> str:
    """Where sub-topology ``subtopology``'s transaction log is: keyed by its id."""
    return under_root(config.root, "transactions", config.application_id, f"subtopology-{subtopology}")


class Committer:
    """Commits every sub-topology of one application instance, with the configured guarantee's
    strategy (:class:`ExactlyOnce` or :class:`AtLeastOnce`)."""

    def __init__(self, registry: TopicRegistry) -> None:
        self.registry = registry
        self.config: StreamsConfig = registry.config
        self.instance = uuid.uuid4().hex[:12]
        self.guarantee = (ExactlyOnce if self.config.exactly_once else AtLeastOnce)(registry, self.instance)
        self.logs: dict[int, TransactionLog] = {}
        self.last: dict[int, DecidedBatch | None] = {}
        self.positions: dict[int, dict[str, int]] = {}

    def log_uri(self, subtopology: int) -> str:
        return transaction_log_uri(self.config, subtopology)

    def txn_app_id(self, subtopology: int) -> str:
        return f"{self.config.application_id}/subtopology-{subtopology}"

    # -- start-up ---------------------------------------------------------------------------

    def recover(self, subtopologies: Sequence[SubTopology]) -> None:
        """Per sub-topology (in parallel): open its log; under exactly_once register the next
        epoch (fencing older instances) and roll the last decided batch forward (an instance that
        died while publishing left it half visible); read where its inputs stand."""
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(subtopologies)))) as pool:
            for sub, (txlog, last) in zip(subtopologies, pool.map(self._recover_one, subtopologies), strict=True):
                self.logs[sub.id], self.last[sub.id] = txlog, last
                self.positions[sub.id] = {t: end for t, (_, end) in (last.sources.items() if last else ())}
                log.info(
                    "sub-topology %d: instance %s%s, resuming after %s",
                    sub.id, self.instance, f" registered with epoch {txlog.epoch}" if self.guarantee.exactly_once else "",
                    self.positions[sub.id] or "(the start)",
                )

    def _recover_one(self, sub: SubTopology) -> tuple[TransactionLog, DecidedBatch | None]:
        txlog = TransactionLog(self.log_uri(sub.id), self.txn_app_id(sub.id), checkpoint_interval=self.config.retention.log_checkpoint_interval)
        return txlog, self.guarantee.recover(txlog)

    @property
    def epoch(self) -> int:
        """This instance's epoch: the highest of its registrations (names its checkpoint)."""
        return max((t.epoch for t in self.logs.values()), default=0)

    def position(self, subtopology: int, topic: str) -> int:
        """Version of ``topic`` up to which the sub-topology has committed its input (-1: none)."""
        return self.positions[subtopology].get(topic, -1)

    # -- one sub-topology's batch ----------------------------------------------------------------

    def check_age(self, written: Sequence[WrittenFile]) -> None:
        """Refuse a batch whose files may be gone: file cleanup (ours, or a zombie's) deletes files
        no commit references once ``orphan_file_delay`` old, and cannot tell a slow batch's
        files from an abandoned one's. So, like Kafka's transaction timeout, a batch older than
        half that delay is never decided (a batch stalled for a minute on a damaged store lost
        its files to a 30 s delay in the crash harness). Steps and commits hold the same lock,
        so no cleanup runs between this check and the decision."""
        retention = self.config.retention
        if not retention.enabled or not written:
            return
        limit_ms = retention.orphan_file_delay.total_seconds() * 1000 / 2
        oldest = min((w.file.modification_time for w in written if w.file.modification_time > 0), default=None)
        if oldest is None:
            return
        age_ms = time.time() * 1000 - oldest
        if age_ms >= limit_ms:
            raise BatchTimedOutError(
                f"the batch's first file was written {age_ms / 1000:.0f} s ago, more than half of retention.orphan_file_delay "
                f"({retention.orphan_file_delay.total_seconds():.0f} s): file cleanup may have deleted its files, so it is "
                "abandoned and run again"
            )

    def commit(self, subtopology: int, sources: Mapping[str, tuple[int, int]], written: Sequence[WrittenFile]) -> Published:
        started = time.perf_counter()
        self.check_age(written)
        published = Published()
        grouped: dict[str, list[WrittenFile]] = defaultdict(list)
        for item in written:
            grouped[item.topic].append(item)
        crash_point("after_data_files")
        # Step 1: one dense offset run per partition.
        with published.phases.time("consolidate"):
            for topic, items in grouped.items():
                published.files[topic] = consolidate(topic, items, self.registry)
        crash_point("after_consolidate")
        txlog = self.logs[subtopology]
        previous = self.last.get(subtopology)
        # Every position, not only those this batch moved: a restart reads them all from the last
        # decided batch, and a topic left out there would be read again from the start (a batch
        # of one input topic out of two, or an idle advance that consumed nothing).
        positions = {t: (end, end) for t, end in self.positions[subtopology].items()}
        batch = DecidedBatch(
            seq=(previous.seq + 1) if previous is not None else 0,
            epoch=txlog.epoch,
            sources={**positions, **sources},
            tables={t: TablePublication(self.registry.uri(t), tuple(published.files[t])) for t in sorted(published.files)},
            exactly_once=self.guarantee.exactly_once,
        )
        self.guarantee.complete(txlog, batch, published.phases)
        self.last[subtopology] = batch
        self.positions[subtopology].update({t: end for t, (_, end) in sources.items()})
        crash_point("before_spark_commit")
        published.seconds = time.perf_counter() - started
        return published
