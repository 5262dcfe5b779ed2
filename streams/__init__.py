"""deltastreams: Kafka Streams' DSL on Spark, with Delta tables as the log.

>>> from streams import StreamsBuilder, TimeWindows
>>> builder = StreamsBuilder()
>>> (builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size(5000))
...  .count().to_stream().to("click-counts"))
>>> print(builder.build().describe())  # doctest: +ELLIPSIS
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [clicks])
...
"""

import importlib
from typing import TYPE_CHECKING, Any

# Public names resolve on first use (PEP 562): the lower layers (state, sinks) import
# streams.errors, which must not drag in the DSL and the test driver that themselves use them.
_EXPORTS = {
    "StreamsBuilder": "streams.builder",
    "KStream": "streams.kstream",
    "KGroupedStream": "streams.kgrouped",
    "TimeWindowedKStream": "streams.kgrouped",
    "KTable": "streams.ktable",
    "TimeWindows": "streams.windows",
    "Suppressed": "streams.windows",
    "Windowed": "streams.records",
    "TestRecord": "streams.testing",
    "TopologyTestDriver": "streams.testing",
    "Topology": "topology.graph",
    "ConfigError": "streams.errors",
    "DeltaStreamsError": "streams.errors",
    "ProcessingError": "streams.errors",
    "ProducerFencedError": "streams.errors",
    "RecordError": "streams.errors",
    "StateStoreError": "streams.errors",
    "TopologyError": "streams.errors",
}

if TYPE_CHECKING:
    from streams.builder import StreamsBuilder
    from streams.testing import TestRecord, TopologyTestDriver


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streams' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ConfigError",
    "DeltaStreamsError",
    "KGroupedStream",
    "KStream",
    "KTable",
    "ProcessingError",
    "ProducerFencedError",
    "RecordError",
    "StateStoreError",
    "StreamsBuilder",
    "Suppressed",
    "TestRecord",
    "TimeWindowedKStream",
    "TimeWindows",
    "Topology",
    "TopologyError",
    "TopologyTestDriver",
    "Windowed",
]
