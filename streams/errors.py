"""The exceptions deltastreams raises, for users: ``from deltastreams.streams.errors import TopologyError``.

They are defined in :mod:`deltastreams.conf.errors`, the bottom layer, so that every package can raise them
without importing the DSL.
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

__all__ = [
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
