"""Committing a micro-batch's files: at-least-once, or exactly-once (docs/exactly-once.md).

At-least-once gives each topic its own Delta commit: the sub-topology's sinks and repartition
topics first, then the dead-letter topic, then the changelogs. A crash between two of these
commits, or after them but before Spark records the batch as done, makes Spark replay the batch:
outputs already committed are appended again (duplicates). Exactly-once decides the whole batch
in one commit to the sub-topology's transaction log first, then publishes (rolls forward).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid
from dataclasses import dataclass, field

import pyarrow.fs as pafs
from deltalake import DeltaTable

from sinks._internal.delta_log import commit_files
from sinks._internal.files import DataFile, filesystem_for, under_root
from sinks.transaction import DecidedBatch, TablePublication, TransactionLog
from streams._internal.runtime.batch import WrittenFile
from streams._internal.runtime.consolidate import by_topic, consolidate
from streams._internal.runtime.crashpoints import crash_point
from streams._internal.runtime.timing import Phases
from streams._internal.runtime.topics import TopicRegistry

log = logging.getLogger("deltastreams")


@dataclass
class Published:
    files: dict[str, list[DataFile]] = field(default_factory=dict)
    seconds: float = 0.0
    phases: Phases = field(default_factory=Phases)


def publication_order(topics, registry: TopicRegistry) -> list[str]:
    changelogs = {t for t in topics if t in registry.changelog_topics}
    dlq = registry.config.dlq_topic
    return sorted(t for t in topics if t not in changelogs and t != dlq) + ([dlq] if dlq in topics else []) + sorted(changelogs)


def checkpoints_dir(config) -> str:
    """Where an application's Spark checkpoints live."""
    return under_root(config.root, "checkpoints", config.application_id)


def lock_for(topic: str, registry: TopicRegistry):
    return registry.lock(topic) if registry.shared(topic) else contextlib.nullcontext()


class AtLeastOnceCommitter:
    """Each table committed on its own; progress is Spark's checkpoint, one per application."""

    exactly_once = False

    def __init__(self, registry: TopicRegistry) -> None:
        self.registry = registry

    def recover(self, subtopologies) -> None:
        """Nothing to recover: at-least-once keeps no transaction state."""

    def start_version(self, subtopology: int) -> int:
        return -1  # Spark's checkpoint knows where the query was

    def checkpoint_dir(self, subtopology: int) -> str:
        return f"{checkpoints_dir(self.registry.config)}/subtopology-{subtopology}"

    def commit(self, subtopology: int, batch_id: int, written: list[WrittenFile], source: tuple[int, int]) -> Published:
        started = time.perf_counter()
        published = Published()
        grouped = by_topic(written)
        crash_point("after_data_files")
        for topic in publication_order(grouped, self.registry):
            with lock_for(topic, self.registry):
                with published.phases.time("consolidate"):
                    final = consolidate(topic, grouped[topic], self.registry)
                with published.phases.time("publish"):
                    table = self.registry.delta_table(topic)
                    version = commit_files(table, final, schema=self.registry.layout(topic).table_schema(), exclusive=True)
                self.registry.committed(topic, version)
                for f in final:
                    self.registry.advance(topic, f.partition, f.num_records)
            published.files[topic] = final
            crash_point("during_publication")
        crash_point("before_spark_commit")
        published.seconds = time.perf_counter() - started
        return published


class ExactlyOnceCommitter:
    """One transaction log per sub-topology; every batch decided in one commit, then published."""

    exactly_once = True

    def __init__(self, registry: TopicRegistry) -> None:
        self.registry = registry
        self.config = registry.config
        self.instance = uuid.uuid4().hex[:12]
        self.logs: dict[int, TransactionLog] = {}
        self.decided: dict[int, DecidedBatch | None] = {}

    def log_uri(self, subtopology: int) -> str:
        return under_root(self.config.root, "transactions", self.config.application_id, f"subtopology-{subtopology}")

    def txn_app_id(self, subtopology: int) -> str:
        return f"{self.config.application_id}/subtopology-{subtopology}"

    def recover(self, subtopologies) -> None:
        """Register a new epoch in every sub-topology's log (fencing older instances), then roll
        the last decided batch forward: an instance that died while publishing left it half
        visible."""
        for sub in subtopologies:
            txlog = TransactionLog(self.log_uri(sub.id), self.txn_app_id(sub.id))
            epoch = txlog.register(self.instance)
            last = txlog.last_decided()
            if last is not None:
                txlog.publish(last, lambda topic, uri: DeltaTable(uri))
            self.logs[sub.id], self.decided[sub.id] = txlog, last
            self._remove_stale_checkpoints(sub.id, epoch)
            log.info("sub-topology %d: instance %s registered with epoch %d, resuming after source version %s",
                     sub.id, self.instance, epoch, last.source_end if last else "(start)")

    def start_version(self, subtopology: int) -> int:
        last = self.decided.get(subtopology)
        return last.source_end if last is not None else -1

    def checkpoint_dir(self, subtopology: int) -> str:
        # Progress lives in the transaction log; Spark's checkpoint belongs to this instance (its
        # epoch) only, so a zombie and its replacement never race on one offset log.
        return f"{checkpoints_dir(self.config)}/subtopology-{subtopology}-epoch-{self.logs[subtopology].epoch}"

    def _remove_stale_checkpoints(self, subtopology: int, epoch: int) -> None:
        """Delete the checkpoints of instances two or more epochs back. The previous instance's
        stays: it may still be running, and must end by being fenced, not by losing its files."""
        fs, parent = filesystem_for(checkpoints_dir(self.config))
        pattern = re.compile(rf"subtopology-{subtopology}-epoch-(\d+)")
        for info in fs.get_file_info(pafs.FileSelector(parent, allow_not_found=True)):
            match = pattern.fullmatch(info.base_name)
            if match and int(match.group(1)) < epoch - 1:
                fs.delete_dir(info.path)

    def commit(self, subtopology: int, batch_id: int, written: list[WrittenFile], source: tuple[int, int]) -> Published:
        started = time.perf_counter()
        published = Published()
        grouped = by_topic(written)
        crash_point("after_data_files")
        order = publication_order(grouped, self.registry)
        txlog = self.logs[subtopology]
        with contextlib.ExitStack() as locks:
            for topic in sorted(t for t in order if self.registry.shared(t)):
                locks.enter_context(self.registry.lock(topic))
            # Step 2: one dense offset run per partition.
            with published.phases.time("consolidate"):
                for topic in order:
                    published.files[topic] = consolidate(topic, grouped[topic], self.registry)
            crash_point("after_consolidate")
            previous = self.decided.get(subtopology)
            batch = DecidedBatch(
                seq=(previous.seq + 1) if previous is not None else 0,
                epoch=txlog.epoch,
                source_start=source[0],
                source_end=source[1],
                tables={t: TablePublication(self.registry.uri(t), tuple(published.files[t])) for t in order},
            )
            # Step 3: the point of no return.
            with published.phases.time("decide"):
                txlog.decide(batch)
            self.decided[subtopology] = batch
            crash_point("after_commit")
            # Step 4: publish, table by table, idempotently.
            with published.phases.time("publish"):
                txlog.publish(batch, lambda topic, uri: self.registry.delta_table(topic), self._published(batch))
        crash_point("before_spark_commit")
        published.seconds = time.perf_counter() - started
        return published

    def _published(self, batch: DecidedBatch):
        count = 0

        def on_published(topic: str, version: int) -> None:
            nonlocal count
            self.registry.committed(topic, version)
            for f in batch.tables[topic].files:
                self.registry.advance(topic, f.partition, f.num_records)
            count += 1
            if count == 1:
                crash_point("during_publication")

        return on_published
