"""Delta topics: creating them, appending records with Kafka's partitioner, reading them back in
offset order (whole topics, or the files a range of versions added), and the exactly-once
protocol's transaction log (:mod:`sinks.transaction`)."""

from sinks._internal.delta_log import AddedFile, files_added, snapshot_files
from sinks._internal.files import read_data_file
from sinks.partitioner import murmur2, partition_for, partitions_for
from sinks.topics import AppendResult, Topic, TopicLayout, create_topic, topic_uri

__all__ = [
    "AddedFile",
    "AppendResult",
    "Topic",
    "TopicLayout",
    "create_topic",
    "files_added",
    "murmur2",
    "partition_for",
    "partitions_for",
    "read_data_file",
    "snapshot_files",
    "topic_uri",
]
