"""deltastreams: Kafka Streams' DSL on Spark, with Delta tables as the log.

>>> from deltastreams.streams import StreamsBuilder, TimeWindows
>>> builder = StreamsBuilder()
>>> (builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size(5000))
...  .count().to_stream().to("click-counts"))
>>> print(builder.build().describe())  # doctest: +ELLIPSIS
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [clicks])
...
"""

from deltastreams.conf.errors import (
    ConfigError,
    DeltaStreamsError,
    ProcessingError,
    ProducerFencedError,
    RecordError,
    StateStoreError,
    TopologyError,
)
from deltastreams.sinks.formats import AvroFormat, JsonFormat
from deltastreams.streams.builder import StreamsBuilder
from deltastreams.streams.dsl import (
    BranchedKStream,
    CogroupedKStream,
    GlobalKTable,
    KGroupedStream,
    KStream,
    KTable,
    SessionWindowedCogroupedKStream,
    SessionWindowedKStream,
    TimeWindowedCogroupedKStream,
    TimeWindowedKStream,
)
from deltastreams.streams.options import Branched, Printed
from deltastreams.streams.windows import BufferConfig, EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows
from deltastreams.topology.graph import Topology
from deltastreams.topology.records import Windowed

__all__ = [
    "AvroFormat",
    "Branched",
    "BufferConfig",
    "BranchedKStream",
    "CogroupedKStream",
    "ConfigError",
    "DeltaStreamsError",
    "EmitStrategy",
    "GlobalKTable",
    "JoinWindows",
    "JsonFormat",
    "KGroupedStream",
    "KStream",
    "KTable",
    "Printed",
    "ProcessingError",
    "ProducerFencedError",
    "RecordError",
    "StateStoreError",
    "SessionWindowedCogroupedKStream",
    "SessionWindowedKStream",
    "SessionWindows",
    "SlidingWindows",
    "StreamsBuilder",
    "Suppressed",
    "TestRecord",
    "TimeWindowedCogroupedKStream",
    "TimeWindowedKStream",
    "TimeWindows",
    "Topology",
    "TopologyError",
    "TopologyTestDriver",
    "Windowed",
]


def __getattr__(name: str):
    # The test driver (and the processing core it runs) only when asked for: an application's
    # driver never runs records itself, and importing the core (pandas with it) cost its start
    # ~1 s on a loaded machine.
    if name in ("TestRecord", "TopologyTestDriver"):
        from deltastreams.streams import testing

        return getattr(testing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
