"""Schema changes of input topics, judged as Kafka users meet them in a schema registry.

A topic's layout (its key and value columns, in the table's description) is what the topology
reads. Other writers may change the table's schema; which changes an application accepts
(docs/bad-input.md):

- **accepted, named in the log**: a column the layout does not have (``ALTER TABLE ADD COLUMNS``,
  an append with ``schema_mode="merge"``). The topology never reads it; rows that carry a value
  in it are bad input (:mod:`deltastreams.sinks._internal.input_read`), named where they go. Kafka:
  adding a field is a compatible change for a reader with the old schema;
- **refused, naming the column**: a column of the layout gone (dropped, renamed) or of another
  type (type widening, a schema overwrite). Records on either side of the change would not have
  one type, as a registry refuses an incompatible schema. The application stops at start (the
  change lies between its position and the topic's head) or when it reaches the version, whatever
  ``on_bad_record`` says: the way out is a new topic with the new schema (and a reset), or
  undoing the change.
"""

from __future__ import annotations

import logging

import pyarrow as pa
from deltalake.exceptions import DeltaError
from deltalake import Schema

from deltastreams.conf.errors import SchemaMismatchError
from deltastreams.sinks import TopicLayout, open_table
from deltastreams.sinks.topics import reserved_columns

log = logging.getLogger("deltastreams")


def columns_of(schema_json: str) -> dict[str, pa.DataType]:
    """The columns of a Delta schema string (a ``metaData`` action's ``schemaString``)."""
    return {f.name: f.type for f in pa.schema(Schema.from_json(schema_json).to_arrow())}


def check_schema(topic: str, layout: TopicLayout, columns: dict[str, pa.DataType], where: str) -> list[str]:
    """Refuse a schema that drops or retypes a column of ``layout`` (naming it); return the
    columns it adds beyond the layout. ``where`` says when the schema was set, for the message."""
    for field in layout.table_schema():
        if field.name not in columns:
            raise SchemaMismatchError(
                f"input topic '{topic}': {where} its table has no column '{field.name}' any more (a column of its layout: dropped "
                f"or renamed; the table's columns: {sorted(columns)}). Records before and after would not have one schema: write "
                "the new records to a new topic (and reset the application to it), or give the column back",
                topic=topic,
                column=field.name,
            )
        if _type(columns[field.name]) != _type(field.type):
            raise SchemaMismatchError(
                f"input topic '{topic}': {where} column '{field.name}' is {columns[field.name]}, not {field.type} as its records "
                "so far (a type change: widening, or an overwrite of the schema). Records before and after would not have one "
                "type: write the new records to a new topic (and reset the application to it), or change the type back",
                topic=topic,
                column=field.name,
            )
    known = set(layout.table_schema().names) | set(reserved_columns())
    return [name for name in columns if name not in known]


def _type(t: pa.DataType) -> pa.DataType:
    """Delta knows no large or view variants: compare as Delta would store them."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    return t


class AddedColumns:
    """Says once per topic and column that a column beyond the layout appeared."""

    def __init__(self) -> None:
        self._said: set[tuple[str, str]] = set()

    def note(self, topic: str, added: list[str], where: str) -> None:
        new = [c for c in added if (topic, c) not in self._said]
        if not new:
            return
        self._said.update((topic, c) for c in new)
        log.warning(
            "input topic %s: %s its table has column(s) %s, which are not in its layout: the topology does not read them, and "
            "rows holding a value there go to the dead-letter topic (or stop the job with on_bad_record = fail)",
            topic, where, new,
        )  # fmt: skip


def check_at_start(topic: str, uri: str, layout: TopicLayout, position: int, added_columns: AddedColumns) -> None:
    """At start: the table's columns beyond the layout are named (once); a column of the layout
    the application's records so far had (at its position) and the table no longer has, or has
    with another type, stops the start, naming it."""
    current = columns_of(open_table(uri).schema().to_json())
    added_columns.note(topic, check_schema(topic, layout, current, "now"), "now")
    if position < 0:
        return
    try:
        then = open_table(uri, position)
    except DeltaError:
        # Its log no longer holds that version (log retention): the versions after it are read
        # one by one anyway, each checked as it comes, or the application stops at start for
        # being behind its input's log (inputs.InputLog.require_positions).
        return
    before = TopicLayout.from_table(then.metadata().description or "", pa.schema(then.schema()))
    check_schema(topic, before, current, f"since version {position} (where the application stands)")
