"""Publishing a micro-batch's files: the at-least-once committer.

Each topic gets its own Delta commit: the sub-topology's sinks and repartition topics first, then
the dead-letter topic, then the changelogs. A crash between two of these commits, or after them
but before Spark records the batch as done, makes Spark replay the batch: outputs already
committed are appended again (duplicates), which is what at-least-once allows. The exactly-once
protocol (``sinks.transaction``) makes all of them one atomic step instead.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from sinks._internal.delta_log import commit_files
from sinks._internal.files import DataFile
from streams._internal.runtime.batch import WrittenFile
from streams._internal.runtime.consolidate import by_topic, consolidate
from streams._internal.runtime.topics import TopicRegistry


@dataclass
class Published:
    files: dict[str, list[DataFile]] = field(default_factory=dict)
    seconds: float = 0.0


def publication_order(topics, registry: TopicRegistry) -> list[str]:
    changelogs = {t for t in topics if t in registry.changelog_topics}
    dlq = registry.config.dlq_topic
    return sorted(t for t in topics if t not in changelogs and t != dlq) + ([dlq] if dlq in topics else []) + sorted(changelogs)


def lock_for(topic: str, registry: TopicRegistry):
    return registry.lock(topic) if registry.shared(topic) else contextlib.nullcontext()


class AtLeastOnceCommitter:
    def __init__(self, registry: TopicRegistry) -> None:
        self.registry = registry

    def recover(self) -> None:
        """Nothing to recover: at-least-once keeps no transaction state."""

    def commit(self, subtopology: int, batch_id: int, written: list[WrittenFile]) -> Published:
        started = time.perf_counter()
        published = Published()
        grouped = by_topic(written)
        for topic in publication_order(grouped, self.registry):
            with lock_for(topic, self.registry):
                final = consolidate(topic, grouped[topic], self.registry)
                table = self.registry.delta_table(topic)
                version = commit_files(table, final, schema=self.registry.layout(topic).table_schema(), exclusive=True)
                self.registry.committed(topic, version)
                for f in final:
                    self.registry.advance(topic, f.partition, f.num_records)
            published.files[topic] = final
        published.seconds = time.perf_counter() - started
        return published
