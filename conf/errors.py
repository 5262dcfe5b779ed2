"""The exceptions deltastreams raises.

One root, :class:`DeltaStreamsError`, and a few families. Every error carries structured context
(the node, topic, store or task it concerns) besides its message, and its docstring says when it is
raised and what to do about it. This module imports nothing from the project, so every package
can use it.
"""

from __future__ import annotations


class DeltaStreamsError(Exception):
    """Root of every error deltastreams raises on purpose."""


class TopologyError(DeltaStreamsError):
    """The topology is invalid; raised while it is built, never mid-stream.

    Fix the DSL call named in the message (``node``), e.g. aggregate a grouped stream, give a
    window a size.
    """

    def __init__(self, message: str, *, node: str | None = None) -> None:
        super().__init__(f"Invalid topology: {message}")
        self.node = node


class TopologyUpgradeError(DeltaStreamsError):
    """A start was refused: its topology renames or drops state the application committed under
    an earlier topology (a store, a repartition topic, or a sub-topology's source positions), which
    it would silently ignore. Raised at start, before anything is written.

    ``changes`` lists each one (``store OLD -> NEW (...)``); ``action`` says how to keep the state
    (give the old names back with ``name=``) or to accept the loss (``topology_upgrade =
    "accept_loss"``). Kafka Streams has no such guard (docs/differences-from-kafka.md).
    """

    def __init__(self, message: str, *, application_id: str, changes: tuple[str, ...], action: str) -> None:
        super().__init__(message)
        self.application_id = application_id
        self.changes = changes
        self.action = action


class ConfigError(DeltaStreamsError):
    """A configuration value is missing or invalid. The message names the setting and the fix."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class TopicError(DeltaStreamsError):
    """A topic (a Delta table) cannot be used as asked."""

    def __init__(self, message: str, *, topic: str) -> None:
        super().__init__(message)
        self.topic = topic


class TopicNotFoundError(TopicError):
    """The topic's Delta table does not exist. Create it first (``deltastreams.sinks.create_topic``) or check
    the root directory and the topic name."""


class UnreadableFileError(TopicError):
    """A committed data file of a topic cannot be read (missing, truncated, not Parquet).

    ``path`` names the file. Restore it from a backup, or, if its records are lost anyway, remove
    it from the topic's Delta log (a ``remove`` commit) and accept that they are skipped; then run
    the job again.
    """

    def __init__(self, message: str, *, topic: str, path: str) -> None:
        super().__init__(message, topic=topic)
        self.path = path


class TopicExistsError(TopicError):
    """A topic was created twice with different settings. Use the existing one or pick a new name."""


class SchemaMismatchError(TopicError):
    """Records or a table do not have the schema the topic (or the topology) expects.

    ``column`` names the offending column; fix the producer or the declared schema.
    """

    def __init__(self, message: str, *, topic: str, column: str | None = None) -> None:
        super().__init__(message, topic=topic)
        self.column = column


class LogRetentionError(DeltaStreamsError):
    """A reader asked for commits of a Delta table whose commit files log retention has deleted
    (Kafka's OffsetOutOfRange). ``uri`` is the table, ``version`` the first missing commit,
    ``oldest`` the oldest version the log still holds (None if unknown).

    Inside an application this means a reader fell further behind than the retained history
    allows (``retention.log_keep_versions`` for the topics it writes; an input topic's
    ``delta.logRetentionDuration``, which its writers apply) or something else deleted the log:
    an application behind its input's log is reset past the gap (docs/retention.md); an outside
    reader must start again from the table's current snapshot.
    """

    def __init__(self, message: str, *, uri: str, version: int, oldest: int | None = None) -> None:
        super().__init__(message)
        self.uri = uri
        self.version = version
        self.oldest = oldest


class ExternalAppendError(DeltaStreamsError):
    """A file another Delta writer appended to a topic breaks the contract for external writers
    (docs/bad-input.md): a null ``partition``, some offsets null and some not, offsets already
    taken in the partition, records without offsets that a rewrite moved into another file, values
    in a column the topic does not have, or a file that cannot be read. ``uri`` is the topic,
    ``path`` the file, ``version`` the version that added it (None: found in a snapshot),
    ``reason`` what is wrong with it.

    A plain read fails with it. An application sends such a file's records to its dead-letter
    topic (``on_bad_record = "dlq"``, the default) or stops with it (``"fail"``): ``action`` then
    names the command that moves the application past the file while keeping its state (``skip``),
    and the other way out, removing the file's rows (a ``DELETE``), then starting again.
    """

    def __init__(
        self, message: str, *, uri: str, path: str, version: int | None = None, reason: str | None = None, topic: str | None = None, action: str | None = None
    ) -> None:
        super().__init__(message)
        self.uri = uri
        self.path = path
        self.version = version
        self.reason = reason
        self.topic = topic
        self.action = action


class RetentionError(DeltaStreamsError):
    """A retention step was asked to do something that would break the log (remove records not
    yet consumed, past a partition's end). Nothing was changed; fix what the caller passes.
    ``uri`` is the table."""

    def __init__(self, message: str, *, uri: str) -> None:
        super().__init__(message)
        self.uri = uri


class RecordError(DeltaStreamsError):
    """A record cannot be processed (null key where one is needed, missing field, wrong type).

    Raised only when bad records are configured to fail the job; by default they go to the
    dead-letter topic with this error's message as the reason.
    """

    def __init__(self, message: str, *, node: str | None = None, topic: str | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.topic = topic


class ProcessingError(DeltaStreamsError):
    """A user function raised while processing a record; ``node`` names the DSL step.

    The original exception is chained (``__cause__``). Fix the function, or let bad records go to
    the dead-letter topic (``on_bad_record = "dlq"``, the default).
    """

    def __init__(self, message: str, *, node: str, task: str | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.task = task


class StateStoreError(DeltaStreamsError):
    """A state store cannot be opened, read or restored. The message names the store and task.

    A local store can always be deleted: it is rebuilt from its changelog topic on the next start.
    """

    def __init__(self, message: str, *, store: str, task: str | None = None) -> None:
        super().__init__(message)
        self.store = store
        self.task = task


class CommitError(DeltaStreamsError):
    """A micro-batch could not be committed. Nothing of it became visible; the batch is retried
    on restart."""


class BatchTimedOutError(CommitError):
    """A micro-batch took so long that file cleanup may already have deleted what its tasks wrote
    (``retention.orphan_file_delay``): it is abandoned, never decided, and run again (Kafka's
    transaction timeout)."""


class ProducerFencedError(CommitError):
    """Another instance of the same application (same ``application_id`` and state) started and
    took over: this instance is a zombie and its writes were not made visible. Stop it; the new
    instance carries on."""

    def __init__(self, message: str, *, application_id: str, epoch: int, current_epoch: int) -> None:
        super().__init__(message)
        self.application_id = application_id
        self.epoch = epoch
        self.current_epoch = current_epoch


class StoreQueryError(StateStoreError):
    """A query of a store's committed state (:mod:`deltastreams.streams.query`) cannot be answered:
    an unknown application or store, nothing committed yet, a batch that is not (or no longer)
    committed, a key of the wrong type, a method the store's kind does not have. The message
    names what is there (the applications, stores, committed batches or the key type) to pick from.
    """
