"""The engine-independent processing core, for tools that drive it directly (``deltastreams.devtools.bench.core``).

A :class:`TaskProcessor` runs one sub-topology for one task: records and stores in, the records
to append per topic, the changelog entries, dead letters and metrics out (:class:`TaskResult`).
It writes nothing and never advances its stores: whoever commits the changelog entries applies
them (``store.abort()``, then ``store.restore(entries)``). Applications use ``StreamsApp`` and
unit tests ``TopologyTestDriver``, which both run this core.
"""

from deltastreams.streams._internal.processing.task import TaskId, TaskProcessor, TaskResult

__all__ = ["TaskId", "TaskProcessor", "TaskResult"]
