"""deltastreams: Kafka Streams' DSL on Spark, with Delta tables as the log.

>>> from deltastreams.streams import StreamsApp, StreamsBuilder, StreamsConfig, TimeWindows
>>> builder = StreamsBuilder()
>>> (builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of_size(5000))
...  .count().to_stream().to("click-counts"))
>>> print(builder.build().describe())  # doctest: +ELLIPSIS
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [clicks])
...

``StreamsApp(builder.build(), {"application_id": "clicks", "root": "/data"}).run()`` runs it on
Spark; ``StreamsApp.main(...)`` gives a program the bundled jobs' command line
(:mod:`deltastreams.streams.app`). ``StreamsApp`` is imported when first named: the DSL and the
test driver need no Spark.
"""

from deltastreams.conf import StreamsConfig
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
    "ApplicationFailedError",
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
    "StreamsApp",
    "StreamsBuilder",
    "StreamsConfig",
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

_LAZY = {
    "StreamsApp": "deltastreams.streams.app",
    "ApplicationFailedError": "deltastreams.streams.errors",
    "TestRecord": "deltastreams.streams.testing",
    "TopologyTestDriver": "deltastreams.streams.testing",
}
"""Names imported when first used: the application runtime imports PySpark, which the DSL, the
test driver and every executor's task host do without; the test driver imports the processing
core (and pandas with it), which an application's driver never runs itself (importing it cost its
start ~1 s on a loaded machine)."""


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'deltastreams.streams' has no attribute {name!r}")
