"""The log: Delta topics (creating them, appending records with Kafka's partitioner, reading them
back in offset order, or the files a range of versions added), their data files, and the
exactly-once protocol's transaction log (:mod:`deltastreams.sinks.transaction`)."""

from deltastreams.sinks._internal.delta_log import VersionRead, commit_files, end_offsets, files_added, latest_version, read_commit, read_version, snapshot_files
from deltastreams.sinks._internal.files import (
    DataFile,
    delete_file,
    filesystem_for,
    read_data_file,
    read_staged_file,
    rewrite_file,
    under_root,
    write_partition_file,
    write_staged_file,
)
from deltastreams.sinks._internal.commit_probe import require_exclusive_commits
from deltastreams.sinks._internal.input_read import BadInput, InputRead, read_input
from deltastreams.sinks._internal.offsets import RejectedFile
from deltastreams.sinks._internal.log_commit import KnownVersion, append_at, checkpoint_due, checkpoint_if_due, checkpoint_interval, commit_rewrite
from deltastreams.sinks._internal.storage import (
    create_table,
    current_storage_options,
    is_object_store,
    open_table,
    require_reachable,
    table_exists,
    use_storage_options,
)
from deltastreams.sinks.partitioner import murmur2, partition_for, partitions_for
from deltastreams.sinks.topics import AppendResult, Topic, TopicLayout, check_encoded_values, check_expected_types, create_topic, create_topic_with_layout, root_has_topics, topic_uri

__all__ = [
    "AppendResult",
    "BadInput",
    "InputRead",
    "read_input",
    "KnownVersion",
    "append_at",
    "commit_rewrite",
    "checkpoint_due",
    "checkpoint_if_due",
    "checkpoint_interval",
    "DataFile",
    "Topic",
    "TopicLayout",
    "check_encoded_values",
    "check_expected_types",
    "create_table",
    "current_storage_options",
    "is_object_store",
    "open_table",
    "table_exists",
    "use_storage_options",
    "commit_files",
    "create_topic",
    "create_topic_with_layout",
    "delete_file",
    "end_offsets",
    "files_added",
    "latest_version",
    "filesystem_for",
    "murmur2",
    "partition_for",
    "partitions_for",
    "read_commit",
    "read_version",
    "RejectedFile",
    "VersionRead",
    "read_data_file",
    "read_staged_file",
    "require_exclusive_commits",
    "require_reachable",
    "rewrite_file",
    "root_has_topics",
    "snapshot_files",
    "topic_uri",
    "under_root",
    "write_partition_file",
    "write_staged_file",
]
