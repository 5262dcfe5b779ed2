"""Reading an input topic's files as an application does: the records the contract for external
writers allows, and everything else set apart with why (never dropped, never a crash).

A plain read (:meth:`deltastreams.sinks.Topic.read`) fails on the first file breaking that contract,
naming it. An application must instead go on without losing anything: it sends what is set apart
here to its dead-letter topic, or stops and names a way past it. Set apart, per file:

- a file the log rejected (:class:`deltastreams.sinks._internal.offsets.RejectedFile`: a null
  partition, offsets taken already, ...): all its rows, as the writer wrote them;
- a file that cannot be read (gone, or not Parquet): nothing to show but the file, its version and
  the offsets its stats gave it. A store's transient error is not that: it raises, and the batch
  runs again;
- the rows of a file that hold a value in a column the topic does not have (a misspelled or new
  column appended with ``schema_mode="merge"``): the topology would never see that value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf.errors import UnreadableFileError
from deltastreams.sinks._internal.files import OFFSET, PARTITION, DataFile, read_raw_file
from deltastreams.sinks._internal.offsets import RejectedFile


@dataclass(frozen=True)
class BadInput:
    """Records an application cannot take from one file of an input topic."""

    topic: str
    version: int | None
    path: str
    partition: int | None
    reason: str
    rows: pa.Table | None
    """The rows as written (every column the writer wrote; ``offset`` as the log assigned it, or
    as the writer set it in a rejected file); None: the file cannot be read."""
    records: int
    """How many records: the rows, or what the file's stats say (-1: unknown)."""
    first_offset: int | None = None
    """Where the log put the file's records (None: it holds no offsets)."""

    def describe(self) -> str:
        """``<topic> version <v>, file <path>: <reason>``: what a dead letter and a log line say."""
        return f"{self.topic} version {self.version}, file {self.path}: {self.reason}"


@dataclass(frozen=True)
class InputRead:
    records: pa.Table
    """Record form, sorted by partition then offset."""
    bad: list[BadInput]


def read_input(topic, files: Sequence[DataFile], versions: Sequence[int | None], rejected: Sequence[RejectedFile] = ()) -> InputRead:
    """``files`` of ``topic`` (a :class:`deltastreams.sinks.Topic`; ``versions[i]`` added
    ``files[i]``) and the ``rejected`` files of those versions, as an application reads them."""
    known = set(topic.layout.table_schema().names) | {PARTITION, OFFSET}
    ordered = sorted(zip(files, versions, strict=True), key=lambda fv: (fv[0].partition, fv[0].min_offset))
    tables, kept, bad = [], [], []
    for f, version in ordered:
        try:
            rows = topic.read_rows(f)
        except UnreadableFileError as e:
            if not isinstance(e.__cause__, FileNotFoundError | pa.ArrowInvalid):
                raise  # a store's transient error: the batch runs again
            span = f" (offsets {f.min_offset}..{f.max_offset})" if f.min_offset >= 0 else ""
            reason = f"cannot be read ({_first_line(e.__cause__)}): its {f.num_records} records{span} are lost unless the file is restored"
            bad.append(BadInput(topic.name, version, f.path, f.partition, reason, None, f.num_records, f.min_offset if f.min_offset >= 0 else None))
            continue
        foreign = [c for c in rows.column_names if c not in known and rows.column(c).null_count < rows.num_rows]
        if foreign:
            holding = _any_valid(rows, foreign)
            bad.append(
                BadInput(
                    topic.name, version, f.path, f.partition, _foreign_reason(topic, foreign, rows.filter(holding)),
                    rows.filter(holding), int(pc.sum(holding).as_py()), f.min_offset,
                )
            )  # fmt: skip
            rows = rows.filter(pc.invert(holding))
        tables.append(rows.drop_columns([c for c in rows.column_names if c not in known]))
        kept.append(f)
    for r in rejected:
        try:
            rows = read_raw_file(topic.uri, r.path)
        except (FileNotFoundError, pa.ArrowInvalid) as e:
            bad.append(BadInput(topic.name, r.version, r.path, r.partition, f"{r.reason}; and it cannot be read ({_first_line(e)})", None, r.num_records))
            continue
        bad.append(BadInput(topic.name, r.version, r.path, r.partition, r.reason, rows, rows.num_rows))
    return InputRead(topic.records_from(tables, kept), bad)


def _any_valid(rows: pa.Table, columns: list[str]) -> pa.Array:
    mask = rows.column(columns[0]).is_valid()
    for name in columns[1:]:
        mask = pc.or_(mask, rows.column(name).is_valid())
    return mask


def _foreign_reason(topic, foreign: list[str], rows: pa.Table) -> str:
    fields = list(topic.layout.value_fields or (topic.layout.value_column,))
    empty = [f for f in fields if f in rows.column_names and rows.column(f).null_count == rows.num_rows or f not in rows.column_names]
    also = f"; the topic's {empty} are null in those rows" if empty else ""
    return (
        f"holds values in column(s) {foreign}, which topic '{topic.name}' does not have (its value columns: {fields}){also}: "
        "a misspelled or new column (an append with schema_mode='merge'?); the topology would never see those values"
    )


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
