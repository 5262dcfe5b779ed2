"""Topics as Delta tables: ``<root>/topics/<name>``, partitioned by ``partition``.

Every row carries ``partition`` (int32), ``offset`` (int64, dense per partition, assigned on
append), ``timestamp`` (int64 epoch ms) and the record's key and value. The key lives in one column
(``key_column``); a struct value is flattened into one column per field, so plain Delta readers
see ordinary tables; a scalar value lives in ``value_column``. The key column may also be a value
field (the pageview events are keyed by their own ``user_id``): it is then stored once. Windowed
records (a windowed aggregation's output) add ``window_start`` and ``window_end``; a topic created
with headers adds ``headers`` (Kafka's record headers: a list of key/bytes pairs). This layout and
the partition count are kept in the table's description, so any process can open the topic.

Inside deltastreams, records travel as Arrow tables in *record form*: ``partition``, ``offset``,
``timestamp``, ``key``, ``value`` (plus the window columns): see :class:`TopicLayout`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import DeltaTable

from deltastreams.sinks._internal import delta_log
from deltastreams.sinks._internal.files import OFFSET, PARTITION, TIMESTAMP, DataFile, delete_file, filesystem_for, read_data_file, under_root, write_partition_file
from deltastreams.sinks._internal.log_commit import append_at, checkpoint_interval_property
from deltastreams.sinks._internal.log_expiry import LOG_RETENTION_PROPERTY, REMOVED_FILE_RETENTION_PROPERTY, interval_text
from deltastreams.sinks._internal.log_head import log_head
from deltastreams.sinks._internal.storage import create_table, open_table, table_exists
from deltastreams.sinks.partitioner import partitions_for
from deltastreams.sinks.serde import HEADERS, HEADERS_TYPE
from deltastreams.conf.errors import CommitError, RecordError, SchemaMismatchError, TopicExistsError, TopicNotFoundError, UnreadableFileError

WINDOW_START = "window_start"
WINDOW_END = "window_end"
KEY = "key"
VALUE = "value"
_FORMAT = "deltastreams-topic/1"
_RESERVED = (PARTITION, OFFSET, TIMESTAMP, WINDOW_START, WINDOW_END, HEADERS)
DEFAULT_LOG_RETENTION = timedelta(days=1)
"""``delta.logRetentionDuration`` of the topics deltastreams creates. Shorter than Delta's 30 days:
a writer appending ten times a second keeps 864,000 commit files a day, and every load of the
table (each checkpoint) lists them; long enough for a stopped application to resume within a day
(an incremental reader behind the log gets LogRetentionError: docs/retention.md)."""
DEFAULT_REMOVED_FILE_RETENTION = timedelta(minutes=20)
"""``delta.deletedFileRetentionDuration`` of the topics deltastreams creates: how long checkpoints
keep a removed file's tombstone. Delta's default, a week, made the input topic's checkpoint grow
with every small file its writer's merges replaced (2 per append at 10 appends/s: 79,000
tombstones, 6.7 MB, at version 39,600 of the 2-hour soak; ~1 GB after a week), and each process
that loads it with it. The writers delete replaced files themselves, from the commit files they
expire (:mod:`deltastreams.sinks._internal.log_expiry`), not from tombstones; what the tombstones
still protect is a file from an outside VACUUM (docs/retention.md). Twice the default
``retention.removed_file_delay``, the value an application's own retention gives its topics."""


def reserved_columns() -> tuple[str, ...]:
    """The record's own columns, beside the key and value columns a layout names."""
    return _RESERVED


def topic_uri(root: str | Path, name: str) -> str:
    return under_root(str(root), "topics", name)


def root_has_topics(root: str | Path) -> bool:
    """Whether anything was ever generated or run under ``root``: its ``topics`` folder holds a
    topic. False for a path that does not exist, an empty folder, or an object-store prefix
    without objects (an object store has no folders, only keys under a prefix: one listing of
    ``<root>/topics/``, with the process's storage options, answers for both kinds)."""
    filesystem, path = filesystem_for(under_root(str(root), "topics"))
    entries = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return any(entry.type == pafs.FileType.Directory for entry in entries)


@dataclass(frozen=True)
class TopicLayout:
    """How a topic's records map onto its Delta columns."""

    partitions: int
    key_column: str
    key_type: pa.DataType
    value_type: pa.DataType
    value_fields: tuple[str, ...] | None = None
    """Set when a struct value is stored one column per field."""
    value_column: str | None = None
    """Set when the value is stored in one column."""
    windowed: bool = False
    headers: bool = False
    """The records keep their headers (a topic without this column stores none)."""

    @classmethod
    def of(
        cls,
        *,
        partitions: int,
        key_type: pa.DataType,
        value_type: pa.DataType,
        key_column: str = KEY,
        value_column: str = VALUE,
        flatten_value: bool = True,
        windowed: bool = False,
        headers: bool = False,
    ) -> TopicLayout:
        if partitions <= 0:
            raise ValueError(f"a topic needs at least one partition, got {partitions}")
        if flatten_value and pa.types.is_struct(value_type):
            fields = tuple(value_type.field(i).name for i in range(value_type.num_fields))
            return cls(partitions, key_column, key_type, value_type, value_fields=fields, windowed=windowed, headers=headers)
        return cls(partitions, key_column, key_type, value_type, value_column=value_column, windowed=windowed, headers=headers)

    @property
    def key_shared(self) -> bool:
        """The key is also one of the value's fields and stored once."""
        return self.value_fields is not None and self.key_column in self.value_fields

    def record_schema(self) -> pa.Schema:
        """Schema of the record form (what readers return, what appends take)."""
        cols = [pa.field(PARTITION, pa.int32()), pa.field(OFFSET, pa.int64()), pa.field(TIMESTAMP, pa.int64())]
        if self.windowed:
            cols += [pa.field(WINDOW_START, pa.int64()), pa.field(WINDOW_END, pa.int64())]
        cols += [pa.field(KEY, self.key_type), pa.field(VALUE, self.value_type)]
        return pa.schema(cols + ([pa.field(HEADERS, HEADERS_TYPE)] if self.headers else []))

    def table_schema(self) -> pa.Schema:
        """Schema of the Delta table (``partition`` is a Delta partition column)."""
        cols = [pa.field(PARTITION, pa.int32()), pa.field(OFFSET, pa.int64()), pa.field(TIMESTAMP, pa.int64())]
        if self.windowed:
            cols += [pa.field(WINDOW_START, pa.int64()), pa.field(WINDOW_END, pa.int64())]
        if not self.key_shared:
            cols.append(pa.field(self.key_column, self.key_type))
        if self.value_fields is not None:
            cols += [self.value_type.field(name) for name in self.value_fields]
        else:
            cols.append(pa.field(self.value_column, self.value_type))
        if self.headers:
            cols.append(pa.field(HEADERS, HEADERS_TYPE))
        names = [c.name for c in cols]
        duplicate = {n for n in names if names.count(n) > 1}
        if duplicate:
            raise ValueError(f"column name(s) {sorted(duplicate)} used twice; rename the key or value column")
        return pa.schema(cols)

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": _FORMAT,
                "partitions": self.partitions,
                "key_column": self.key_column,
                "value_fields": list(self.value_fields) if self.value_fields is not None else None,
                "value_column": self.value_column,
                "windowed": self.windowed,
                **({"headers": True} if self.headers else {}),
            }
        )

    @classmethod
    def from_table(cls, description: str, schema: pa.Schema) -> TopicLayout:
        spec = json.loads(description)
        if spec.get("format") != _FORMAT:
            raise ValueError("not a deltastreams topic")
        key_type = schema.field(spec["key_column"]).type
        fields = spec.get("value_fields")
        headers = spec.get("headers", False)
        if fields is not None:
            value_type = pa.struct([schema.field(n) for n in fields])
            return cls(spec["partitions"], spec["key_column"], key_type, value_type, tuple(fields), None, spec["windowed"], headers)
        value_type = schema.field(spec["value_column"]).type
        return cls(spec["partitions"], spec["key_column"], key_type, value_type, None, spec["value_column"], spec["windowed"], headers)

    # -- conversions between the table's columns and the record form --------------------------

    def to_records(self, table: pa.Table) -> pa.Table:
        """Delta rows (any column order) -> record form."""
        cols = {PARTITION: table.column(PARTITION), OFFSET: table.column(OFFSET), TIMESTAMP: table.column(TIMESTAMP)}
        if self.windowed:
            cols[WINDOW_START] = table.column(WINDOW_START)
            cols[WINDOW_END] = table.column(WINDOW_END)
        cols[KEY] = table.column(self.key_column)
        if self.value_fields is not None:
            arrays = [table.column(n).combine_chunks() for n in self.value_fields]
            cols[VALUE] = pa.StructArray.from_arrays(arrays, fields=list(self.value_type), mask=self._null_values(arrays))
        else:
            cols[VALUE] = table.column(self.value_column)
        if self.headers:
            cols[HEADERS] = table.column(HEADERS)
        return pa.table(cols, schema=self.record_schema())

    def _null_values(self, arrays: list[pa.Array]) -> pa.Array | None:
        """Which rows hold a null value: every value field null (the shared key field aside).
        One column per field has no place for the struct's own null, so a value whose fields
        are all null reads back as a null value (docs/differences-from-kafka.md)."""
        data = [a for n, a in zip(self.value_fields, arrays, strict=True) if not (self.key_shared and n == self.key_column)]
        if not data or not any(a.null_count for a in data):
            return None
        null = data[0].is_null()
        for array in data[1:]:
            null = pc.and_(null, array.is_null())
        return null

    def to_table_columns(self, records: pa.Table, topic: str) -> pa.Table:
        """Record form (with offsets assigned) -> the table's columns, without ``partition``."""
        records = self.conform(records, topic)
        cols: dict[str, pa.ChunkedArray | pa.Array] = {OFFSET: records.column(OFFSET), TIMESTAMP: records.column(TIMESTAMP)}
        if self.windowed:
            cols[WINDOW_START] = records.column(WINDOW_START)
            cols[WINDOW_END] = records.column(WINDOW_END)
        key = records.column(KEY)
        value = records.column(VALUE)
        if not self.key_shared:
            cols[self.key_column] = key
        if self.value_fields is not None:
            struct = value.combine_chunks()
            # flatten() applies the struct's own nulls to its fields: a null value (a delete)
            # is stored as null fields, not as whatever the children hold under the null.
            fields = dict(zip((f.name for f in struct.type), struct.flatten(), strict=True))
            if self.key_shared:  # a null value still stores its key
                fields[self.key_column] = pc.if_else(struct.is_null(), key.combine_chunks(), fields[self.key_column])
            for name in self.value_fields:
                cols[name] = fields[name]
            if self.key_shared:
                shared = fields[self.key_column]
                mismatch = pc.invert(pc.equal(shared, key.combine_chunks()).fill_null(False))
                if pc.any(mismatch).as_py():
                    i = int(np.flatnonzero(np.asarray(mismatch))[0])
                    raise SchemaMismatchError(
                        f"topic '{topic}' stores its key in the value field '{self.key_column}', but record {i} "
                        f"has key {key[i].as_py()!r} and {self.key_column}={shared[i].as_py()!r}",
                        topic=topic,
                        column=self.key_column,
                    )
        else:
            cols[self.value_column] = value
        if self.headers:
            cols[HEADERS] = records.column(HEADERS)
        return pa.table(cols)

    def conform(self, records: pa.Table, topic: str) -> pa.Table:
        """Cast record-form ``records`` to this layout's types; fail clearly when they differ."""
        expected = self.record_schema()
        for name in (KEY, VALUE, TIMESTAMP) + ((WINDOW_START, WINDOW_END) if self.windowed else ()):
            if name not in records.column_names:
                raise SchemaMismatchError(f"records for topic '{topic}' have no '{name}' column", topic=topic, column=name)
        arrays = []
        for field in expected:
            if field.name not in records.column_names:
                arrays.append(pa.nulls(records.num_rows, field.type))
                continue
            column = records.column(field.name)
            if column.type != field.type:
                column = _cast(column, field.type, topic, field.name)
            arrays.append(column)
        return pa.table(arrays, schema=expected)


def _cast(column: pa.ChunkedArray, target: pa.DataType, topic: str, name: str) -> pa.ChunkedArray:
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), target)
    try:
        if pa.types.is_struct(target) and pa.types.is_struct(column.type):
            return _cast_struct(column.combine_chunks(), target, topic, name)
        return column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(
            f"topic '{topic}' expects column '{name}' of type {target}, got {column.type}: {e}", topic=topic, column=name
        ) from None


def _cast_struct(array: pa.StructArray, target: pa.StructType, topic: str, name: str) -> pa.Array:
    have = {array.type.field(i).name for i in range(array.type.num_fields)}
    missing = [f.name for f in target if f.name not in have]
    extra = sorted(have - {f.name for f in target})
    if missing or extra:
        raise SchemaMismatchError(
            f"topic '{topic}' expects {name} fields {[f.name for f in target]}; records have "
            f"{sorted(have)} (missing {missing}, unexpected {extra})",
            topic=topic,
            column=f"{name}.{(missing or extra)[0]}",
        )
    children = [_cast(pa.chunked_array([array.field(f.name)]), f.type, topic, f"{name}.{f.name}").combine_chunks() for f in target]
    return pa.StructArray.from_arrays(children, fields=list(target), mask=array.is_null() if array.null_count else None)


@dataclass(frozen=True)
class AppendResult:
    version: int
    first_offsets: dict[int, int]
    """Offset of the first appended record, per partition written."""
    counts: dict[int, int]


class Topic:
    """A topic's Delta table: append records, read them back in offset order."""

    def __init__(self, name: str, uri: str, layout: TopicLayout, *, table_id: str | None = None) -> None:
        self.name = name
        self.uri = uri
        self.layout = layout
        self.table_id = table_id
        """The Delta table's id when known: a table created again at the same place is another topic."""

    @property
    def partitions(self) -> int:
        return self.layout.partitions

    def __repr__(self) -> str:
        return f"Topic({self.name!r}, partitions={self.partitions}, uri={self.uri!r})"

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, root: str | Path, name: str) -> Topic:
        uri = topic_uri(root, name)
        if not table_exists(uri):
            raise TopicNotFoundError(
                f"topic '{name}' does not exist (no Delta table at {uri}); create it first or check the root",
                topic=name,
            )
        table = open_table(uri)
        try:
            layout = TopicLayout.from_table(table.metadata().description or "", pa.schema(table.schema()))
        except KeyError as e:  # a column the layout names is not in the table
            column = str(e.args[0]).removeprefix("Column ").removesuffix(" does not exist in schema")
            raise SchemaMismatchError(
                f"topic '{name}': its layout (the table's description) names column '{column}', which the Delta table at {uri} does "
                f"not have (its columns: {pa.schema(table.schema()).names}): dropped or renamed by another writer? Records before and "
                "after would not have one schema: give the column back, or write the new records to a new topic",
                topic=name,
                column=column,
            ) from None
        except ValueError as e:
            raise SchemaMismatchError(
                f"the Delta table at {uri} is not a deltastreams topic (its description holds no topic layout: {e}); "
                "create topics with deltastreams.sinks.create_topic",
                topic=name,
            ) from None
        return cls(name, uri, layout, table_id=table.metadata().id)

    @classmethod
    def exists(cls, root: str | Path, name: str) -> bool:
        return table_exists(topic_uri(root, name))

    def delta_table(self, version: int | None = None) -> DeltaTable:
        return open_table(self.uri, version)

    def version(self) -> int:
        return self.delta_table().version()

    def end_offsets(self) -> dict[int, int]:
        """Next offset per partition (0 for an empty partition), after every commit so far: from
        what this process knows of the log's head, and the commit files written since."""
        head = log_head(self.uri)
        with head.lock:
            ends = head.current(self.table_id).ends
            return {p: ends.get(p, 0) for p in range(self.partitions)}

    # -- appending --------------------------------------------------------------------------

    def assign_partitions(self, records: pa.Table) -> np.ndarray:
        """Target partition per record: the ``partition`` column if present, else Kafka's
        default partitioner over the key."""
        if PARTITION in records.column_names:
            parts = records.column(PARTITION).to_numpy(zero_copy_only=False).astype(np.int32)
            bad = (parts < 0) | (parts >= self.partitions)
            if bad.any():
                raise RecordError(
                    f"record {int(np.flatnonzero(bad)[0])} names partition {int(parts[bad][0])}, but topic "
                    f"'{self.name}' has partitions 0..{self.partitions - 1}",
                    topic=self.name,
                )
            return parts
        parts = partitions_for(records.column(KEY), self.partitions)
        if (parts < 0).any():
            i = int(np.flatnonzero(parts < 0)[0])
            raise RecordError(
                f"record {i} has a null key, but topic '{self.name}' has {self.partitions} partitions and "
                "Kafka's default partitioner needs a key to pick one; give the record a key or a partition",
                topic=self.name,
            )
        return parts

    def prepare_files(self, records: pa.Table, next_offsets: dict[int, int], *, staging: bool = False, transient: bool = False) -> list[DataFile]:
        """Write ``records`` (record form, in append order) as one file per partition, assigning
        offsets from ``next_offsets``. Nothing is visible until :meth:`commit` adds the files;
        ``staging`` files must be rewritten as Parquet first (see ``write_partition_file``)."""
        if records.num_rows == 0:
            return []
        parts = self.assign_partitions(records)
        body = self.layout.to_table_columns(records, self.name)
        files = []
        order = np.argsort(parts, kind="stable")
        sorted_parts = parts[order]
        bounds = np.flatnonzero(np.diff(sorted_parts)) + 1
        for chunk in np.split(order, bounds):
            partition = int(parts[chunk[0]])
            first = next_offsets.get(partition, 0)
            rows = body.take(pa.array(chunk))
            rows = rows.set_column(rows.schema.get_field_index(OFFSET), OFFSET, pa.array(np.arange(first, first + len(chunk), dtype=np.int64)))
            files.append(write_partition_file(self.uri, partition, rows, staging=staging, transient=transient))
        return files

    def commit(self, files: Sequence[DataFile], *, table: DeltaTable | None = None, txn: tuple[str, int] | None = None) -> int:
        """Add prepared files in one atomic Delta commit; exclusive, because their offsets were
        assigned against the version ``table`` is at. Through delta-rs, whose commit lists the
        whole log: :meth:`append` is the path whose cost does not grow with it."""
        table = table if table is not None else self.delta_table()
        return delta_log.commit_files(table, files, schema=self.layout.table_schema(), txn=txn, exclusive=True)

    def append(self, records: pa.Table, *, attempts: int = 10) -> AppendResult:
        """Append records (record form: ``key``, ``value``, ``timestamp``, optional ``partition``)
        in one Delta commit, assigning dense offsets per partition. The same cost whatever the
        length of the topic's log (:mod:`deltastreams.sinks._internal.log_head`): the commit goes
        right after the version this process knows, in one conditional write. Another writer
        committing first (a Spark job appending to the same topic) moves the ends: the files are
        written again after them, up to ``attempts`` times. Every ``delta.checkpointInterval``
        versions the append also writes a checkpoint, merges small files and deletes the commit
        files older than ``delta.logRetentionDuration`` (docs/retention.md)."""
        head = log_head(self.uri)
        with head.lock:
            for attempt in range(1, attempts + 1):
                known = head.known(self.table_id)
                files = self.prepare_files(records, known.ends)
                if not files:
                    return AppendResult(head.current(self.table_id).version, {}, {})
                version = append_at(self.uri, known.version, files)
                if version is not None:
                    head.committed(version, files)
                    break
                for f in files:
                    delete_file(self.uri, f.path)
                if attempt == attempts:
                    raise CommitError(
                        f"topic '{self.name}': another writer committed first {attempts} times in a row; nothing was appended. "
                        "Appends from several processes to one topic take turns: try again, or pass more attempts"
                    )
                head.catch_up()
            head.maintain(version)
        return AppendResult(
            version,
            {f.partition: f.min_offset for f in files},
            {f.partition: f.num_records for f in files},
        )

    # -- reading ----------------------------------------------------------------------------

    def files(self, after_version: int | None = None, up_to_version: int | None = None) -> list[delta_log.DataFile]:
        up_to = self.version() if up_to_version is None else up_to_version
        return delta_log.files_added(self.uri, after_version, up_to)

    def read(
        self,
        partition: int | None = None,
        *,
        after_version: int | None = None,
        up_to_version: int | None = None,
    ) -> pa.Table:
        """Records committed in versions ``(after_version, up_to_version]`` (all, by default), of
        one partition or all, in record form, sorted by partition then offset."""
        files = [f for f in self.files(after_version, up_to_version) if partition is None or f.partition == partition]
        return self.read_files(files)

    def read_files(self, files: Sequence[delta_log.DataFile]) -> pa.Table:
        if not files:
            return self.layout.record_schema().empty_table()
        if all(f.min_offset >= 0 for f in files):
            # A snapshot lists files in no particular order: ordering the files is free, ordering
            # their records afterwards took a third of reading 1M events.
            files = sorted(files, key=lambda f: (f.partition, f.min_offset))
        return self.records_from([self.read_rows(f) for f in files], files)

    def read_rows(self, f: delta_log.DataFile) -> pa.Table:
        """One committed file's rows as stored (every column the writer wrote), with ``partition``
        and assigned offsets; :class:`UnreadableFileError` if it cannot be read."""
        try:
            return read_data_file(self.uri, f.path, f.partition, f.min_offset)
        except (OSError, pa.ArrowInvalid) as e:
            raise UnreadableFileError(
                f"topic '{self.name}': committed file {self.uri}/{f.path} (partition {f.partition}, offsets "
                f"{f.min_offset}..{f.max_offset}) cannot be read: {e}",
                topic=self.name,
                path=f"{self.uri}/{f.path}",
            ) from e

    def records_from(self, tables: Sequence[pa.Table], files: Sequence[delta_log.DataFile]) -> pa.Table:
        """Record form of ``tables`` (what :meth:`read_rows` gave for ``files``), sorted by
        partition then offset."""
        if not tables:
            return self.layout.record_schema().empty_table()
        rows = pa.concat_tables(tables, promote_options="default")
        for field in self.layout.table_schema():
            if field.name not in rows.column_names:  # left out by every file read (a Delta writer may omit nullable columns)
                rows = rows.append_column(field, pa.nulls(rows.num_rows, field.type))
        records = self.layout.to_records(rows)
        if _in_order(files):  # the usual case: one partition's files in commit order
            return records
        return records.sort_by([(PARTITION, "ascending"), (OFFSET, "ascending")])


def _in_order(files: Sequence[delta_log.DataFile]) -> bool:
    keys = [(f.partition, f.min_offset, f.max_offset) for f in files]
    return all(a[0] < b[0] or (a[0] == b[0] and a[2] < b[1]) for a, b in zip(keys, keys[1:])) and all(k[1] >= 0 for k in keys)


def create_topic(
    root: str | Path,
    name: str,
    *,
    partitions: int,
    key_type: pa.DataType,
    value_type: pa.DataType,
    key_column: str = KEY,
    value_column: str = VALUE,
    flatten_value: bool = True,
    windowed: bool = False,
    headers: bool = False,
    exist_ok: bool = False,
    log_retention: timedelta | None = DEFAULT_LOG_RETENTION,
    checkpoint_interval: int | None = None,
    removed_file_retention: timedelta | None = DEFAULT_REMOVED_FILE_RETENTION,
) -> Topic:
    """Create a topic (an empty Delta table partitioned by ``partition``); ``headers``: its
    records keep their headers. ``log_retention`` (the table's ``delta.logRetentionDuration``;
    None: Delta's default, 30 days) is how long its writers keep commit files, hence how far
    behind an incremental reader may fall (docs/retention.md); ``checkpoint_interval``: its
    ``delta.checkpointInterval`` (None: Delta's default, 100); ``removed_file_retention``: its
    ``delta.deletedFileRetentionDuration``, how long checkpoints remember removed files (None:
    Delta's default, a week)."""
    layout = TopicLayout.of(
        partitions=partitions,
        key_type=key_type,
        value_type=value_type,
        key_column=key_column,
        value_column=value_column,
        flatten_value=flatten_value,
        windowed=windowed,
        headers=headers,
    )
    return create_topic_with_layout(
        root, name, layout, exist_ok=exist_ok, log_retention=log_retention, checkpoint_interval=checkpoint_interval, removed_file_retention=removed_file_retention
    )


def create_topic_with_layout(
    root: str | Path,
    name: str,
    layout: TopicLayout,
    *,
    exist_ok: bool = False,
    log_retention: timedelta | None = DEFAULT_LOG_RETENTION,
    checkpoint_interval: int | None = None,
    removed_file_retention: timedelta | None = DEFAULT_REMOVED_FILE_RETENTION,
) -> Topic:
    user_columns = [layout.key_column, *(layout.value_fields or (layout.value_column,))]
    clashes = [c for c in user_columns if c in _RESERVED]
    if clashes:
        raise SchemaMismatchError(
            f"topic '{name}' cannot use the column name(s) {clashes}: {list(_RESERVED)} are the record's own columns",
            topic=name,
            column=clashes[0],
        )
    uri = topic_uri(root, name)
    if table_exists(uri):
        existing = Topic.open(root, name)
        if exist_ok and existing.layout == layout:
            return existing
        if exist_ok:
            raise TopicExistsError(
                f"topic '{name}' exists with layout {existing.layout}, not {layout}; use the existing layout or another name",
                topic=name,
            )
        raise TopicExistsError(f"topic '{name}' already exists at {uri}", topic=name)
    table = create_table(
        uri,
        layout.table_schema(),
        partition_by=[PARTITION],
        name=name,
        description=layout.to_json(),
        configuration=_log_properties(log_retention, checkpoint_interval, removed_file_retention),
    )
    return Topic(name, uri, layout, table_id=table.metadata().id)


def _log_properties(log_retention: timedelta | None, checkpoint_interval: int | None, removed_file_retention: timedelta | None) -> dict[str, str] | None:
    properties = {}
    for name, value, key in (("log_retention", log_retention, LOG_RETENTION_PROPERTY), ("removed_file_retention", removed_file_retention, REMOVED_FILE_RETENTION_PROPERTY)):
        if value is not None:
            if value <= timedelta(0):
                raise ValueError(f"{name} must be positive (or None for Delta's default), got {value}")
            properties[key] = interval_text(value)
    properties |= checkpoint_interval_property(checkpoint_interval)
    return properties or None


def check_expected_types(topic: str, layout: TopicLayout, key_type: pa.DataType | None, value_type: pa.DataType | None) -> None:
    """Fail, naming the column, if a topic's key or value differ from what a reader expects."""
    if key_type is not None and layout.key_type != key_type:
        raise SchemaMismatchError(
            f"topic '{topic}': key column '{layout.key_column}' is {layout.key_type}, the topology expects {key_type}",
            topic=topic,
            column=layout.key_column,
        )
    if value_type is None or layout.value_type == value_type:
        return
    if pa.types.is_struct(value_type) and pa.types.is_struct(layout.value_type):
        have = {f.name: f.type for f in layout.value_type}
        for field in value_type:
            if field.name not in have:
                raise SchemaMismatchError(
                    f"topic '{topic}' has no column '{field.name}' (it has {sorted(have)}); the topology expects it as {field.type}",
                    topic=topic,
                    column=field.name,
                )
            if have[field.name] != field.type:
                raise SchemaMismatchError(
                    f"topic '{topic}': column '{field.name}' is {have[field.name]}, the topology expects {field.type}",
                    topic=topic,
                    column=field.name,
                )
        return
    column = layout.value_column or "value"
    raise SchemaMismatchError(
        f"topic '{topic}': value column '{column}' is {layout.value_type}, the topology expects {value_type}",
        topic=topic,
        column=column,
    )


def check_encoded_values(topic: str, layout: TopicLayout, format_name: str) -> None:
    """Fail, naming the column, if a topic read with a value format does not hold its values as
    one column of encoded bytes (binary, or string for JSON text written by another system)."""
    value_type = layout.value_type
    if layout.value_column is not None and (pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type) or pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        return
    where = f"column '{layout.value_column}' is {value_type}" if layout.value_column else f"values are stored one column per field ({value_type})"
    raise SchemaMismatchError(
        f"topic '{topic}' is read with value_format={format_name}, but its {where}, not the encoded bytes: a topic read with a format "
        "holds each value encoded in one binary column (write it with to(..., value_format=...)), or drop value_format to read it as it is",
        topic=topic,
        column=layout.value_column,
    )
