"""Make a sub-topology batch's files into one dense offset sequence per partition.

Tasks write their files in parallel, each numbering a partition's records from where the
partition ended when the trigger was planned. A partition written by one task keeps that file as
is (unless a cast is needed). A partition of a sink or the dead-letter topic written by several
tasks (or by an earlier sub-topology of the same trigger) gets its files renumbered one after the
other, in writer order: nothing downstream in the application reads these topics, so their order
across writers is not a processing order. (Repartition topics, which are read downstream, arrive
here already merged in event-time order by the downstream tasks: :mod:`deltastreams.streams._internal.runtime.merge`.)
A topic created by this batch gets one schema (the first writer's, unless its types are null where
another writer's are not).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from deltastreams.sinks import DataFile, TopicLayout, rewrite_file
from deltastreams.streams._internal.runtime.plan import WrittenFile, schema_from_text
from deltastreams.streams._internal.runtime.registry import TopicRegistry


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
    """One topic's final files, offsets dense from the registry's next offsets."""
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
        first = next_offsets[partition]
        for item in sorted(items, key=lambda w: (w.writer, w.file.min_offset)):
            shift = first - item.file.min_offset
            cast = item.schema is not None and schema_from_text(item.schema) != table_schema
            if shift or cast:
                jobs.append(functools.partial(rewrite_file, uri, item.file, shift=shift, schema=file_schema if cast else None))
            else:
                jobs.append(functools.partial(lambda f: f, item.file))
            first += item.file.num_records
    if len(jobs) <= 1:
        return [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda job: job(), jobs))
