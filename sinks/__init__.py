"""Delta topics: creating them, appending records with Kafka's partitioner, reading them back in
offset order; later also the commit protocol and read_committed readers."""

from sinks.partitioner import murmur2, partition_for, partitions_for
from sinks.topics import AppendResult, Topic, TopicLayout, create_topic, topic_uri

__all__ = [
    "AppendResult",
    "Topic",
    "TopicLayout",
    "create_topic",
    "murmur2",
    "partition_for",
    "partitions_for",
    "topic_uri",
]
