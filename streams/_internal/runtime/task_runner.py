"""One task of one micro-batch, on an executor: stores in, files out.

The task opens its stores (caught up with their committed changelogs), runs the processing core on
its records, and writes every output as Parquet files *next to* the topics' tables, not into them:
nothing is visible until the driver's commit adds the files. Offsets are assigned from where each
partition ends; a task is the only writer of its changelog partition, so those offsets are final,
while a partition of a repartition or sink topic may get files from several tasks, whose offsets
the driver shifts into one dense sequence (:mod:`streams._internal.runtime.offsets`). Pending
store writes are thrown away at the end: stores advance only from committed changelogs.
"""

from __future__ import annotations

import time

import pyarrow as pa

from sinks.topics import Topic
from state.task_stores import TaskStores, changelog_records
from streams._internal.processing.task import TaskProcessor
from streams._internal.runtime.collector import with_partitions
from streams._internal.runtime.batch import BatchSpec, TaskOutcome, TopicTarget, WrittenFile, schema_to_text
from streams._internal.runtime.timing import Phases


def write_records(target: TopicTarget, records: pa.Table, writer: int) -> list[WrittenFile]:
    """Write ``records`` (record form with ``partition``, no offsets) as one file per partition."""
    if records.num_rows == 0:
        return []
    layout = target.layout_for(records.schema)
    topic = Topic(target.physical, target.uri, layout)
    next_offsets = dict(enumerate(target.next_offsets)) if target.next_offsets else {}
    files = topic.prepare_files(records, next_offsets, staging=target.staging)
    new = target.layout is None
    schema = schema_to_text(layout.table_schema()) if new else None
    layout_text = layout.to_json() if new else None
    return [WrittenFile(target.logical, writer, f, schema, layout_text) for f in files]


def _write_outputs(spec: BatchSpec, partition: int, result, records: pa.Table) -> list[WrittenFile]:
    files: list[WrittenFile] = []
    for topic, table in result.outputs.items():
        target = spec.outputs[topic]
        files += write_records(target, with_partitions(table, target.partitions, partition), partition)
    if result.dead_letters.num_rows:
        files += write_records(spec.outputs[spec.dead_letter_topic], with_partitions(result.dead_letters, 1, partition), partition)
    stamp = int(pa.compute.max(records.column("timestamp")).as_py() or 0) if records.num_rows else 0
    for store, entries in result.changelogs.items():
        if entries:
            target = spec.outputs[spec.changelogs[store]]
            files += write_records(target, changelog_records(entries, partition, stamp), partition)
    return files


def run_task(spec: BatchSpec, partition: int, records: pa.Table, phases: Phases | None = None) -> TaskOutcome:
    """Process one task's records; ``phases`` may already hold the time spent reading them."""
    started = time.perf_counter()
    phases = phases if phases is not None else Phases()
    topology = spec.topology
    sub = topology.subtopologies[spec.subtopology]
    outcome = TaskOutcome(partition)
    stores = TaskStores(
        spec.state_dir,
        spec.application_id,
        f"{sub.id}_{partition}",
        {store: spec.changelog_positions[store][partition] for store in sub.stores},
    )
    try:
        with phases.time("restore"):
            opened = stores.open()
        outcome.restored_entries = sum(r.entries for r in stores.restores)
        outcome.restore_seconds = sum(r.seconds for r in stores.restores)
        processor = TaskProcessor(
            topology,
            sub,
            partition,
            opened,
            caching=spec.caching,
            fail_on_bad_record=spec.fail_on_bad_record,
            late_records_topic=spec.late_records_topic,
            entry=spec.entry,
        )
        with phases.time("process"):
            result = processor.process({sub.source_topics[0]: records})
        with phases.time("write"):
            outcome.files = _write_outputs(spec, partition, result, records)
    finally:
        stores.close()
    outcome.processed = result.processed
    outcome.dropped_records = result.dropped_records
    outcome.emitted = sum(t.num_rows for t in result.outputs.values())
    outcome.dead_letters = result.dead_letters.num_rows
    outcome.process_seconds = time.perf_counter() - started
    outcome.phases = dict(phases)
    return outcome
