"""The Catalyst prefix of a sub-topology: its leading Spark Column steps, applied to the records
of a batch read before the processing core takes over (``deltastreams.topology.compile`` decides which)."""

from __future__ import annotations

from deltastreams.topology.compile import CompiledSubtopology
from deltastreams.topology.records import HEADERS, REJECTED
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import FilterNode, MapValuesNode, SelectKeyNode


def apply_catalyst_steps(compiled: CompiledSubtopology, topology: Topology, frame):
    """The Column steps over a DataFrame of records (partition, offset, timestamp, key, value,
    [headers]), plus a ``_rejected`` column: the reason a step found a record bad, or null."""
    from pyspark.sql import functions as F

    frame = frame.withColumn(REJECTED, F.lit(None).cast("string"))
    headers = [HEADERS] if HEADERS in frame.columns else []  # carried along untouched
    for name in compiled.catalyst_steps:
        node = topology.nodes[name]
        fn = node.function.fn
        if isinstance(node, FilterNode):
            # A null predicate (a missing field) marks the record bad instead of dropping it;
            # the processing core routes marked records to the dead-letter topic.
            reason = F.when(fn.isNull() & F.col(REJECTED).isNull(), F.lit(f"{name}: predicate is null for this record (a missing field?)"))
            frame = frame.withColumn(REJECTED, F.coalesce(F.col(REJECTED), reason))
            frame = frame.filter(F.col(REJECTED).isNotNull() | ((~fn) if node.negate else fn))
        elif isinstance(node, MapValuesNode):
            frame = frame.withColumn("value", fn)
        elif isinstance(node, SelectKeyNode):
            frame = frame.withColumn("key", fn)
        else:
            key, value = fn
            frame = frame.select("partition", "offset", "timestamp", key.alias("key"), value.alias("value"), REJECTED, *headers)
    return frame.select("partition", "offset", "timestamp", "key", "value", REJECTED, *headers)
