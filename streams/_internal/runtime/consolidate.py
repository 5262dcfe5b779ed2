"""Make a batch's files into one dense offset sequence per partition, in a deterministic order.

Tasks write their files in parallel, each numbering a partition's records from where the
partition ended before the batch. A partition written by one task keeps that file as is (unless a
cast is needed). A partition written by several tasks gets their records merged into one file in
event-time order (Kafka's PartitionGroup choice: next comes the writer whose next record is
earliest) and renumbered. Interleaving writers by arrival, or one writer after the other, would
make stream time downstream jump ahead by a whole batch and drop records as late depending on how
the input was cut into batches; the merge keeps results independent of that, up to records within
a few milliseconds of a batch boundary. A topic created by this batch gets one schema (the
first writer's, unless its types are null where another writer's are not).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from sinks._internal.files import DataFile, merge_files, rewrite_file
from sinks.topics import TopicLayout
from streams._internal.runtime.batch import WrittenFile, schema_from_text
from streams._internal.runtime.topics import TopicRegistry


def _null_columns(schema: pa.Schema) -> int:
    return sum(pa.types.is_null(f.type) for f in schema)


def _choose_layouts(files: list[WrittenFile], registry: TopicRegistry) -> None:
    """Create topics first written in this batch, from the most complete writer's types."""
    candidates: dict[str, list[WrittenFile]] = defaultdict(list)
    for written in files:
        if written.layout is not None and not registry.exists(written.topic):
            candidates[written.topic].append(written)
    for topic, written in candidates.items():
        best = min(sorted(written, key=lambda w: w.writer), key=lambda w: _null_columns(schema_from_text(w.schema)))
        spec = TopicLayout.from_table(best.layout, schema_from_text(best.schema))
        registry.ensure_created(topic, spec)


def consolidate(topic: str, files: list[WrittenFile], registry: TopicRegistry, *, threads: int = 4) -> list[DataFile]:
    """One topic's final files, offsets dense from the registry's next offsets. Call with the
    topic's lock held if other sub-topologies write it too."""
    _choose_layouts(files, registry)
    table_schema = registry.layout(topic).table_schema()
    file_schema = pa.schema([f for f in table_schema if f.name != "partition"])
    next_offsets = registry.next_offsets(topic)
    uri = registry.uri(topic)
    per_partition: dict[int, list[WrittenFile]] = defaultdict(list)
    for item in files:
        per_partition[item.file.partition].append(item)
    jobs = []
    for partition, items in sorted(per_partition.items()):
        items.sort(key=lambda w: (w.writer, w.file.min_offset))
        first = next_offsets[partition]
        if len(items) > 1:
            jobs.append(functools.partial(merge_files, uri, partition, [w.file for w in items], first_offset=first, schema=file_schema))
        else:
            item = items[0]
            shift = first - item.file.min_offset
            cast = item.schema is not None and schema_from_text(item.schema) != table_schema
            staged = item.file.path.endswith(".arrow")
            if shift or cast or staged:
                jobs.append(functools.partial(rewrite_file, uri, item.file, shift=shift, schema=file_schema if cast else None))
            else:
                jobs.append(functools.partial(lambda f: f, item.file))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda job: job(), jobs))


def by_topic(files: list[WrittenFile]) -> dict[str, list[WrittenFile]]:
    grouped: dict[str, list[WrittenFile]] = defaultdict(list)
    for written in files:
        grouped[written.topic].append(written)
    return dict(grouped)
