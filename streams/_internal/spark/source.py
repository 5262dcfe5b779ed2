"""A PySpark streaming data source over an application's input topics:
``spark.readStream.format("deltastreams")``.

Offsets are Delta table versions, one per input topic (``{"<topic>": v, ...}``: everything
committed up to ``v`` is in). Spark keeps them in its checkpoint and calls ``foreachBatch`` when
some topic has new versions; the driver then plans the trigger from the offset log
(:mod:`streams._internal.spark.offset_log`) and the transaction logs, never by executing the
batch's DataFrame (its rows would be the records, through the JVM, several times slower than
tasks reading their files). A batch is bounded by ``max_records`` per topic: whole commits at a
time, at least one.

Options: ``topics`` (JSON list of ``{"name", "uri"}``), ``max_records``, ``start_versions`` (JSON
object: the version each topic has been consumed up to; default -1). A *batch* read with option
``slices`` gives the records themselves, for sub-topologies that start with Spark Column
expressions: ``uri``, ``slices`` (JSON list of [partition, files]), one Spark partition per task,
in offset order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

TICK_SCHEMA = "topic STRING"


@dataclass
class TopicSlice(InputPartition):
    partition: int
    files: list  # [path, partition, num_records, min_offset, max_offset]


class DeltaTopicSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "deltastreams"

    def schema(self):
        if "slices" not in self.options:
            return TICK_SCHEMA
        from deltalake import DeltaTable
        from pyspark.sql.pandas.types import from_arrow_schema

        from sinks import TopicLayout

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
        return [TopicSlice(partition, files) for partition, files in self.slices]

    def read(self, partition: TopicSlice):
        from deltalake import DeltaTable

        from sinks import AddedFile, Topic, TopicLayout

        if not partition.files:
            return
        table = DeltaTable(self.uri)
        layout = TopicLayout.from_table(table.metadata().description, pa.schema(table.schema()))
        topic = Topic(self.uri.rstrip("/").rsplit("/", 1)[-1], self.uri, layout)
        yield from topic.read_files([AddedFile(*f) for f in partition.files]).to_batches()


class TopicStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict) -> None:
        self.topics = {t["name"]: t["uri"] for t in json.loads(options["topics"])}
        self.max_records = int(options.get("max_records", 1_000_000))
        starts = json.loads(options.get("start_versions", "{}"))
        self.start_versions = {name: int(starts.get(name, -1)) for name in self.topics}
        self._records_per_version: dict[tuple[str, int], int] = {}
        self._available_now: dict[str, int] | None = None
        self._tables: dict = {}

    def _latest_version(self, name: str) -> int:
        from deltalake import DeltaTable

        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = DeltaTable(self.topics[name])
        else:
            table.update_incremental()
        version = table.version()
        return version if self._available_now is None else min(version, self._available_now[name])

    def _records_in(self, name: str, version: int) -> int:
        key = (name, version)
        if key not in self._records_per_version:
            from sinks import files_added

            self._records_per_version[key] = sum(max(f.num_records, 0) for f in files_added(self.topics[name], version - 1, version))
        return self._records_per_version[key]

    def initialOffset(self) -> dict:
        return dict(self.start_versions)

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = None
        self._available_now = {name: self._latest_version(name) for name in self.topics}

    def latestOffset(self, start: dict, limit) -> dict:
        budget = None if isinstance(limit, ReadAllAvailable) else (limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_records)
        return {name: self._bounded_end(name, int(start.get(name, -1)), budget) for name in self.topics}

    def _bounded_end(self, name: str, current: int, budget: int | None) -> int:
        latest = self._latest_version(name)
        if budget is None or latest <= current:
            return max(latest, current)
        end, taken = current, 0
        while end < latest:
            count = self._records_in(name, end + 1)
            if taken and taken + count > budget:
                break
            end, taken = end + 1, taken + count
        for key in [k for k in self._records_per_version if k[0] == name and k[1] <= current]:
            del self._records_per_version[key]
        return end

    def partitions(self, start: dict, end: dict):
        return [TopicSlice(0, [])]  # never executed: the driver plans from the offset log

    def read(self, partition: TopicSlice):
        return iter(())

    def commit(self, end: dict) -> None:
        """Progress lives in the transaction logs; topics are retained by their own settings."""
