"""A PySpark data source giving the records of given files of a Delta topic to Spark:
``spark.read.format("deltastreams").option("uri", ...).option("slices", ...)``.

Only sub-topologies that start with Spark Column expressions need their records inside Spark
(every other task reads its own files, several times faster than records through the JVM).
``slices`` is a JSON list of ``[partition, files]``: one Spark partition per task, in offset order;
``form=table`` gives the topic's Delta columns instead of the record form
(:func:`deltastreams.streams.spark.topic_frame`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

STORAGE_OPTIONS = "storage_options_secret"
"""The option carrying the storage options (JSON). Its name matches Spark's default
``spark.redaction.regex`` (``secret``), so plans and the UI show it redacted."""


def _use_storage_options(options: dict) -> None:
    """The reader runs in Spark's Python workers, other processes: set the application's options there."""
    from deltastreams.sinks import use_storage_options

    if STORAGE_OPTIONS in options:
        use_storage_options(json.loads(options[STORAGE_OPTIONS]))


TABLE_FORM = "table"
"""``form`` option: the topic's Delta columns (what ``format("delta")`` gives) instead of the
record form (``key``, ``value``) the Catalyst prefix takes."""


@dataclass
class TopicSlice(InputPartition):
    partition: int
    files: list  # [path, partition, num_records, min_offset, max_offset]


class DeltaTopicSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "deltastreams"

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        from deltastreams.sinks import TopicLayout, open_table

        _use_storage_options(self.options)
        table = open_table(self.options["uri"])
        layout = TopicLayout.from_table(table.metadata().description, pa.schema(table.schema()))
        return from_arrow_schema(layout.table_schema() if self.options.get("form") == TABLE_FORM else layout.record_schema())

    def reader(self, schema):
        return TopicRecordsReader(self.options)


class TopicRecordsReader(DataSourceReader):
    """Records of given files, one Spark partition per topic partition, in offset order."""

    def __init__(self, options: dict) -> None:
        self.uri = options["uri"]
        self.slices = json.loads(options["slices"])
        self.options = dict(options)

    def partitions(self):
        return [TopicSlice(partition, files) for partition, files in self.slices]

    def read(self, partition: TopicSlice):
        from deltastreams.sinks import DataFile, Topic, TopicLayout, open_table

        if not partition.files:
            return
        _use_storage_options(self.options)
        table = open_table(self.uri)
        layout = TopicLayout.from_table(table.metadata().description, pa.schema(table.schema()))
        topic = Topic(self.uri.rstrip("/").rsplit("/", 1)[-1], self.uri, layout)
        records = topic.read_files([DataFile(*f) for f in partition.files])
        if self.options.get("form") == TABLE_FORM:
            columns = layout.to_table_columns(records, topic.name)
            records = columns.add_column(0, "partition", records.column("partition")).select(layout.table_schema().names)
        yield from records.to_batches()
