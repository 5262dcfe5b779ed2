"""Learn the types of a topology's outputs before any record flows, where that is possible.

Running the processing core on an empty batch with the source topic's types yields empty, typed
outputs when every step keeps types without seeing values (pyarrow expressions, aggregations).
Topics whose types come out fully known are created at start, so every sub-topology's query
starts at once instead of waiting for its upstream's first batch to create its source topic.
Python callables give null types on an empty batch: their topics are created by the first write.
"""

from __future__ import annotations

import logging

import pyarrow as pa

from state import ChangeLoggingStore, InMemoryKeyValueStore
from streams._internal.processing.task import TaskProcessor
from topology.graph import Topology

log = logging.getLogger("deltastreams")


def _typed(schema: pa.Schema) -> bool:
    def known(t: pa.DataType) -> bool:
        if pa.types.is_null(t):
            return False
        if pa.types.is_struct(t):
            return all(known(t.field(i).type) for i in range(t.num_fields))
        return True

    return all(known(f.type) for f in schema)


def create_typed_topics(topology: Topology, registry, executor_topology: Topology) -> list[str]:
    """Create the output topics whose types an empty dry run reveals; returns their names."""
    created = []
    for sub in topology.subtopologies:  # in id order: upstream sub-topologies come first
        source = sub.source_topics[0]
        if not registry.exists(source):
            continue
        layout = registry.source_target(source).layout
        stores = {name: ChangeLoggingStore(InMemoryKeyValueStore(name)) for name in sub.stores}
        try:
            task = TaskProcessor(executor_topology, sub, 0, stores)
        except Exception:  # noqa: BLE001 - e.g. Column steps the core cannot run: learn types at the first batch
            continue
        result = task.process({source: layout.record_schema().empty_table()})
        for topic, table in result.outputs.items():
            if registry.exists(topic) or not _typed(table.schema):
                continue
            registry.ensure_created(topic, registry.target(topic).layout_for(table.schema))
            created.append(topic)
    if created:
        log.info("created topics %s from the topology's types", created)
    return created
