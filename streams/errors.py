"""The exceptions deltastreams raises, for users: ``from deltastreams.streams.errors import TopologyError``.

They are defined in :mod:`deltastreams.conf.errors`, the bottom layer, so that every package can raise them
without importing the DSL; :class:`ApplicationFailedError`, which carries the runtime's explanation of
a failed batch, is defined here.
"""

from deltastreams.conf.errors import (
    CommitError,
    ConfigError,
    DeltaStreamsError,
    LogRetentionError,
    ProcessingError,
    ProducerFencedError,
    RecordError,
    SchemaMismatchError,
    StateStoreError,
    TopicError,
    TopicExistsError,
    TopicNotFoundError,
    TopologyError,
    TopologyUpgradeError,
    UnreadableFileError,
)
from deltastreams.streams._internal.runtime.failures import Failure


class ApplicationFailedError(DeltaStreamsError):
    """A running application stopped because a batch failed. ``failure`` says what failed (which
    file, table or process) and what to do; ``details`` holds the full error, with Spark's and
    Python's stack traces, for the log file. Fix what ``failure.action`` names and start the
    application again: it resumes after its last committed batch."""

    def __init__(self, application_id: str, failure: Failure, details: str) -> None:
        super().__init__(f"application {application_id} failed: {failure.what}")
        self.application_id = application_id
        self.failure = failure
        self.details = details

__all__ = [
    "ApplicationFailedError",
    "CommitError",
    "ConfigError",
    "DeltaStreamsError",
    "LogRetentionError",
    "ProcessingError",
    "ProducerFencedError",
    "RecordError",
    "SchemaMismatchError",
    "StateStoreError",
    "TopicError",
    "TopicExistsError",
    "TopicNotFoundError",
    "TopologyError",
    "TopologyUpgradeError",
    "UnreadableFileError",
]
