"""A PySpark streaming data source over a Delta topic: ``spark.readStream.format("deltastreams")``.

Offsets are Delta table versions (``{"version": v}``: everything committed up to ``v`` is read),
kept in Spark's checkpoint, so a replayed micro-batch covers exactly the same versions and thus the
same records. Each micro-batch has one input partition per topic partition (one per task).

The stream's rows are *descriptors*: one row per task naming the Parquet files the batch holds for
it (and the batch's version range). The task reads them itself with pyarrow, so records never pass
through the JVM; that is several times faster than shipping rows to Spark and back to Python.
Sub-topologies that start with Spark Column expressions need the records inside Spark: they read
them with a *batch* read of the same source (``spark.read.format("deltastreams")`` with option
``slices``), one Spark partition per task, in offset order.

Streaming options: ``uri`` (topic table), ``partitions``, ``max_records`` (upper bound of records
per micro-batch, whole commits at a time, at least one), ``start_version`` (the version already
consumed, default -1). Batch options: ``uri``, ``slices`` (JSON list of [partition, files]).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

DESCRIPTOR_SCHEMA = "partition INT, start_version LONG, end_version LONG, files STRING"


@dataclass
class TopicSlice(InputPartition):
    partition: int
    start_version: int
    end_version: int
    files: list  # [path, partition, num_records, min_offset, max_offset]


def files_json(files) -> str:
    return json.dumps(files)


def slices_from_json(text: str):
    from sinks._internal.delta_log import AddedFile

    return [AddedFile(*f) for f in json.loads(text)]


class DeltaTopicSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "deltastreams"

    def schema(self):
        if "slices" not in self.options:
            return DESCRIPTOR_SCHEMA
        from pyspark.sql.pandas.types import from_arrow_schema

        from sinks.topics import TopicLayout
        from deltalake import DeltaTable

        table = DeltaTable(self.options["uri"])
        layout = TopicLayout.from_table(table.metadata().description, pa.schema(table.schema()))
        return from_arrow_schema(layout.record_schema())

    def streamReader(self, schema):
        return TopicStreamReader(self.options)

    def reader(self, schema):
        return TopicRecordsReader(self.options)


class TopicRecordsReader(DataSourceReader):
    """Records of given files, one Spark partition per topic partition, in offset order."""

    def __init__(self, options: dict) -> None:
        self.uri = options["uri"]
        self.slices = json.loads(options["slices"])

    def partitions(self):
        return [TopicSlice(partition, -1, -1, files) for partition, files in self.slices]

    def read(self, partition: TopicSlice):
        from deltalake import DeltaTable

        from sinks._internal.delta_log import AddedFile
        from sinks.topics import Topic, TopicLayout

        if not partition.files:
            return
        table = DeltaTable(self.uri)
        layout = TopicLayout.from_table(table.metadata().description, pa.schema(table.schema()))
        topic = Topic(self.uri.rstrip("/").rsplit("/", 1)[-1], self.uri, layout)
        yield from topic.read_files([AddedFile(*f) for f in partition.files]).to_batches()


class TopicStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict) -> None:
        self.uri = options["uri"]
        self.partitions_count = int(options["partitions"])
        self.max_records = int(options.get("max_records", 1_000_000))
        self.start_version = int(options.get("start_version", -1))
        self._records_per_version: dict[int, int] = {}
        self._available_now: int | None = None
        self._table = None

    def _latest_version(self) -> int:
        from deltalake import DeltaTable

        if self._table is None:
            self._table = DeltaTable(self.uri)
        else:
            self._table.update_incremental()
        version = self._table.version()
        return version if self._available_now is None else min(version, self._available_now)

    def _records_in(self, version: int) -> int:
        if version not in self._records_per_version:
            from sinks._internal.delta_log import files_added

            self._records_per_version[version] = sum(max(f.num_records, 0) for f in files_added(self.uri, version - 1, version))
        return self._records_per_version[version]

    def initialOffset(self) -> dict:
        return {"version": self.start_version}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = None
        self._available_now = self._latest_version()

    def latestOffset(self, start: dict, limit) -> dict:
        latest = self._latest_version()
        current = int(start["version"])
        if isinstance(limit, ReadAllAvailable) or latest <= current:
            return {"version": max(latest, current)}
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_records
        end, taken = current, 0
        while end < latest:
            count = self._records_in(end + 1)
            if taken and taken + count > budget:
                break
            end, taken = end + 1, taken + count
        # Forget counts of versions already consumed.
        for version in [v for v in self._records_per_version if v <= current]:
            del self._records_per_version[version]
        return {"version": end}

    def partitions(self, start: dict, end: dict):
        from sinks._internal.delta_log import files_added

        first, last = int(start["version"]), int(end["version"])
        if last <= first:
            return []
        by_partition: dict[int, list] = {p: [] for p in range(self.partitions_count)}
        for f in files_added(self.uri, first, last):
            by_partition[f.partition].append([f.path, f.partition, f.num_records, f.min_offset, f.max_offset])
        return [TopicSlice(p, first, last, files) for p, files in sorted(by_partition.items())]

    def read(self, partition: TopicSlice):
        yield (partition.partition, partition.start_version, partition.end_version, files_json(partition.files))

    def commit(self, end: dict) -> None:
        """Topics are retained; nothing to release."""
