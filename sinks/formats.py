"""Value formats with a declared schema: how a topic's value bytes become typed records and back.

Kafka Streams declares a serde per topic (``Consumed.with(keySerde, valueSerde)``,
``Produced.with(...)``); here ``builder.stream(topic, value_format=AvroFormat(schema))`` and
``.to(topic, value_format=JsonFormat(fields))`` do the same. The topic holds the encoded bytes (a
``value`` binary column on a Delta topic, the record value on a Kafka topic), as other systems
writing Avro or JSON to either would; the processing core sees the decoded value, an Arrow struct
typed by the schema. A record whose bytes do not match the schema is not dropped and does not stop
the job: :meth:`decode` / :meth:`encode` return, per record, why it does not fit, and the core sends
it to the dead-letter topic with that reason and its raw bytes.

A null value is Kafka's tombstone: it stays null both ways, never an encoded payload.

Schemas are checked when the format is built (:class:`~deltastreams.conf.errors.TopologyError`),
so a typo in a schema fails ``StreamsBuilder`` calls, not the first batch.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from deltastreams.conf.errors import TopologyError

__all__ = ["AvroFormat", "Coded", "JsonFormat", "ValueFormat", "check_value_format"]


@dataclass(frozen=True)
class Coded:
    """The outcome of decoding or encoding a batch: one entry per record, in order."""

    values: pa.Array
    """Decoded values (the format's ``value_type``) or encoded bytes (binary); null where the
    record did not fit."""
    errors: list[str | None]
    """Per record, why it does not fit the schema (None: it does)."""


@runtime_checkable
class ValueFormat(Protocol):
    """What a value format offers the runtime (see :class:`AvroFormat`, :class:`JsonFormat`)."""

    @property
    def value_type(self) -> pa.DataType:
        """The Arrow type of decoded values."""
        ...

    def decode(self, raw: Sequence[bytes | None]) -> Coded: ...

    def encode(self, values: pa.Array | pa.ChunkedArray) -> Coded: ...

    def raw_text(self, raw: bytes) -> Any:
        """What the dead-letter topic shows of bytes that did not decode."""
        ...


def check_value_format(value_format: Any, operator: str) -> None:
    """Fail at build time if ``value_format`` is not a format (a schema passed bare, most likely)."""
    if not isinstance(value_format, ValueFormat):
        raise TopologyError(
            f"{operator}(): value_format is a format such as AvroFormat(schema) or JsonFormat(fields), got {value_format!r:.80}", node=operator
        )


# -- Avro ------------------------------------------------------------------------------------------

_AVRO_PRIMITIVES = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}
_AVRO_LOGICAL = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
}


def _avro_to_arrow(schema: Any, named: dict[str, pa.DataType], where: str) -> pa.DataType:
    """The Arrow type fastavro's decoded values of ``schema`` (parsed) fit."""
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[schema]
        if schema in named:
            return named[schema]
        raise TopologyError(f"Avro schema: unknown type {schema!r} at {where}")
    if isinstance(schema, list):  # a union: only [null, T] has one Arrow type
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise TopologyError(
                f"Avro schema: the union {json.dumps(schema)} at {where} has several non-null branches; only [\"null\", T] "
                "unions are supported (Arrow columns have one type): split it into optional fields"
            )
        return _avro_to_arrow(branches[0], named, where)
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return pa.decimal128(schema["precision"], schema.get("scale", 0))
    if logical is not None and (kind, logical) in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[(kind, logical)]
    if logical is not None and logical != "uuid" and isinstance(kind, str) and kind in _AVRO_PRIMITIVES:
        raise TopologyError(f"Avro schema: logical type {logical!r} at {where} is not supported; drop the logicalType to read the {kind}")
    if kind == "record":
        # A recursive record has no finite Arrow type: it fails here, naming the field.
        fields = [pa.field(f["name"], _avro_to_arrow(f["type"], named, f"{where}.{f['name']}")) for f in schema["fields"]]
        named[schema["name"]] = pa.struct(fields)
        return named[schema["name"]]
    if kind == "enum":
        named[schema["name"]] = pa.string()
        return pa.string()
    if kind == "fixed":
        named[schema["name"]] = pa.binary(schema["size"])
        return named[schema["name"]]
    if kind == "array":
        return pa.list_(_avro_to_arrow(schema["items"], named, f"{where}[]"))
    if kind == "map":
        return pa.map_(pa.string(), _avro_to_arrow(schema["values"], named, f"{where}{{}}"))
    if logical == "uuid":
        return pa.string()
    return _avro_to_arrow(kind, named, where)


def _load_avro_schema(schema: Mapping[str, Any] | str | Path, what: str) -> Any:
    """A parsed Avro schema from a dict, a JSON text or an ``.avsc`` file."""
    import fastavro

    source = schema
    if isinstance(schema, Path) or (isinstance(schema, str) and schema.strip().endswith(".avsc")):
        path = Path(schema)
        try:
            source = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise TopologyError(f"AvroFormat: cannot read the {what} from {path}: {e}") from e
    elif isinstance(schema, str) and schema.lstrip()[:1] in ("{", "["):
        try:
            source = json.loads(schema)
        except ValueError as e:
            raise TopologyError(f"AvroFormat: the {what} is not valid JSON: {e}") from e
    if not isinstance(source, (Mapping, list, str)):
        raise TopologyError(f"AvroFormat: the {what} is an Avro schema (a dict, its JSON text or an .avsc path), got {type(schema).__name__}")
    try:
        return fastavro.parse_schema(dict(source) if isinstance(source, Mapping) else source)
    except Exception as e:  # noqa: BLE001 - fastavro raises SchemaParseException, UnknownType, KeyError...
        raise TopologyError(f"AvroFormat: the {what} is not a valid Avro schema: {type(e).__name__}: {e}") from e


@dataclass(frozen=True)
class AvroFormat:
    """Avro binary values (no container header, no Schema Registry prefix), read and written
    with fastavro.

    ``schema``: the Avro schema (a dict, its JSON text, or the path of an ``.avsc`` file) the
    records are written with. ``reader_schema``: read them as this (later) schema instead,
    Avro's schema resolution: added fields with defaults are filled in, removed fields dropped,
    ints promoted to longs; decoded values have the reader schema's type. Writing always uses
    ``reader_schema`` if given, else ``schema``.
    """

    schema: Any
    reader_schema: Any = None

    def __post_init__(self) -> None:
        self._parsed  # noqa: B018 - parse now: a bad schema fails where the topology is built

    @functools.cached_property
    def _parsed(self) -> tuple[Any, Any, pa.DataType]:
        """The writer schema, the reader schema (or None) as fastavro parsed them, and the Arrow
        type of decoded values (cached: the spec fields stay as the user gave them)."""
        writer = _load_avro_schema(self.schema, "schema")
        reader = _load_avro_schema(self.reader_schema, "reader schema") if self.reader_schema is not None else None
        value_type = _avro_to_arrow(reader if reader is not None else writer, {}, "the value")
        if reader is not None:
            _check_resolvable(writer, reader)
        return writer, reader, value_type

    @property
    def _writer(self) -> Any:
        return self._parsed[0]

    @property
    def _reader(self) -> Any:
        return self._parsed[1]

    @property
    def _type(self) -> pa.DataType:
        return self._parsed[2]

    @property
    def value_type(self) -> pa.DataType:
        return self._type

    def decode(self, raw: Sequence[bytes | None]) -> Coded:
        import fastavro

        decoded: list[Any] = []
        errors: list[str | None] = [None] * len(raw)
        for i, data in enumerate(raw):
            if data is None:
                decoded.append(None)
                continue
            stream = io.BytesIO(data)
            try:
                value = fastavro.schemaless_reader(stream, self._writer, self._reader)
                left = len(data) - stream.tell()
                if left:
                    raise ValueError(f"{left} byte(s) left over after the record: it was not written with this schema")
            except Exception as e:  # noqa: BLE001 - bad bytes raise anything from EOFError to IndexError
                errors[i] = f"value is not Avro of schema {_schema_name(self._writer)} ({type(e).__name__}: {str(e) or 'the bytes end mid-record'})"
                decoded.append(None)
                continue
            decoded.append(value)
        return _fitted(decoded, self._type, errors)

    def encode(self, values: pa.Array | pa.ChunkedArray) -> Coded:
        import fastavro
        from fastavro.validation import ValidationError, validate

        schema = self._reader if self._reader is not None else self._writer
        out: list[bytes | None] = []
        errors: list[str | None] = [None] * len(values)
        for i, value in enumerate(values.to_pylist()):
            if value is None:
                out.append(None)
                continue
            try:
                validate(value, schema, raise_errors=True)
                stream = io.BytesIO()
                fastavro.schemaless_writer(stream, schema, value)
                out.append(stream.getvalue())
            except (ValidationError, ValueError, TypeError) as e:
                errors[i] = f"value does not fit Avro schema {_schema_name(schema)}: {_validation_text(e)}"
                out.append(None)
        return Coded(pa.array(out, pa.binary()), errors)

    def raw_text(self, raw: bytes) -> Any:
        return raw  # binary: the dead-letter topic shows it as hex


def _check_resolvable(writer: Any, reader: Any) -> None:
    """Fail at build time if no record written with ``writer`` can be read as ``reader``: resolve
    the writer's default-shaped record (an empty one would not be valid)."""
    import fastavro
    from fastavro.read import SchemaResolutionError

    try:
        stream = io.BytesIO()
        fastavro.schemaless_writer(stream, writer, _sample(writer))
        stream.seek(0)
        fastavro.schemaless_reader(stream, writer, reader)
    except SchemaResolutionError as e:
        raise TopologyError(f"AvroFormat: records written with the schema cannot be read with the reader schema: {e}") from e
    except Exception:  # noqa: BLE001, S110 - the sample could not be built: resolution is checked per record
        pass


def _sample(schema: Any) -> Any:
    """A value of ``schema`` (parsed): zeros, empty strings, the first enum symbol, the null branch."""
    if isinstance(schema, list):
        return None if "null" in schema else _sample(schema[0])
    if isinstance(schema, str):
        return {"null": None, "boolean": False, "int": 0, "long": 0, "float": 0.0, "double": 0.0, "bytes": b"", "string": ""}.get(schema)
    kind = schema["type"]
    if schema.get("logicalType") in ("decimal",):
        return decimal.Decimal(0)
    if schema.get("logicalType") in ("date",):
        return _dt.date(1970, 1, 1)
    if kind == "record":
        return {f["name"]: _sample(f["type"]) for f in schema["fields"]}
    if kind == "enum":
        return schema["symbols"][0]
    if kind == "fixed":
        return b"\0" * schema["size"]
    if kind == "array":
        return []
    if kind == "map":
        return {}
    return _sample(kind)


def _schema_name(schema: Any) -> str:
    return repr(schema.get("name", schema.get("type"))) if isinstance(schema, dict) else repr(schema)


def _validation_text(error: Exception) -> str:
    if getattr(error, "errors", None):
        return "; ".join(str(e) for e in error.errors)
    return f"{type(error).__name__}: {error}"


# -- JSON ------------------------------------------------------------------------------------------

_JSON_TYPES = {
    "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(),
}


@dataclass(frozen=True)
class JsonFormat:
    """JSON object values (UTF-8) with declared fields, checked strictly.

    ``fields``: the value's fields, as a mapping of name to a type name (``"string"``, ``"int"``,
    ``"long"``, ``"float"``, ``"double"``, ``"boolean"``) or a pyarrow type (nested structs and
    lists), or as a ``pyarrow.Schema`` / struct type. Every field is required unless named in
    ``optional`` (then it may be missing or null). A value that is not a JSON object, misses a
    required field, or holds a field of another type (``"5"`` for a long, ``1.5`` for a long,
    ``true`` for a number) does not fit; fields not declared are ignored, as Confluent's JSON
    Schema serde does by default.
    """

    fields: Any
    optional: Sequence[str] = ()

    def __post_init__(self) -> None:
        self._type  # noqa: B018 - check now: a bad declaration fails where the topology is built

    @functools.cached_property
    def _type(self) -> pa.StructType:
        if isinstance(self.fields, pa.Schema):
            declared = list(self.fields)
        elif isinstance(self.fields, pa.StructType):
            declared = list(self.fields)
        elif isinstance(self.fields, Mapping) and self.fields:
            declared = [pa.field(str(name), _json_type(name, t)) for name, t in self.fields.items()]
        else:
            raise TopologyError(
                f"JsonFormat: fields are a mapping of field name to type (e.g. {{'user_id': 'string', 'duration_s': 'long'}}) "
                f"or a pyarrow schema, got {self.fields!r}"
            )
        if isinstance(self.optional, str):
            raise TopologyError(f"JsonFormat: optional is a list of field names, got the string {self.optional!r}")
        unknown = sorted(set(self.optional) - {f.name for f in declared})
        if unknown:
            raise TopologyError(f"JsonFormat: optional names {unknown}, which are not declared fields {[f.name for f in declared]}")
        return pa.struct(declared)

    @property
    def value_type(self) -> pa.StructType:
        return self._type

    def decode(self, raw: Sequence[bytes | None]) -> Coded:
        decoded: list[Any] = []
        errors: list[str | None] = [None] * len(raw)
        for i, data in enumerate(raw):
            if data is None:
                decoded.append(None)
                continue
            try:
                value = json.loads(data)
            except ValueError as e:  # UnicodeDecodeError is a ValueError
                errors[i] = f"value is not JSON: {type(e).__name__}: {e}"
                decoded.append(None)
                continue
            problem = self._problem(value)
            errors[i] = problem
            decoded.append(None if problem else {f.name: value.get(f.name) for f in self._type})
        return _fitted(decoded, self._type, errors)

    def encode(self, values: pa.Array | pa.ChunkedArray) -> Coded:
        out: list[bytes | None] = []
        errors: list[str | None] = [None] * len(values)
        for i, value in enumerate(values.to_pylist()):
            if value is None:
                out.append(None)
                continue
            problem = self._problem(value)
            if problem:
                errors[i] = problem
                out.append(None)
                continue
            record = {f.name: value.get(f.name) for f in self._type}
            out.append(json.dumps(record, separators=(",", ":"), default=_json_default).encode())
        return Coded(pa.array(out, pa.binary()), errors)

    def raw_text(self, raw: bytes) -> Any:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw

    def _problem(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"value is not a JSON object: {_short(value)}"
        missing = [f.name for f in self._type if value.get(f.name) is None and f.name not in self.optional]
        if missing:
            return f"value misses required field(s) {missing}"
        for f in self._type:
            got = value.get(f.name)
            if got is not None and not _fits(got, f.type):
                return f"field '{f.name}' is {_short(got)} ({type(got).__name__}), not {f.type}"
        return None


def _json_type(name: Any, declared: Any) -> pa.DataType:
    if isinstance(declared, pa.DataType):
        return declared
    if isinstance(declared, str) and declared in _JSON_TYPES:
        return _JSON_TYPES[declared]
    raise TopologyError(f"JsonFormat: field '{name}' has type {declared!r}; use one of {sorted(_JSON_TYPES)} or a pyarrow type")


def _fits(value: Any, type_: pa.DataType) -> bool:
    """Whether a JSON value is of ``type_``, strictly: pyarrow would truncate 1.5 to a long and
    JSON's booleans are ints to Python."""
    if pa.types.is_integer(type_):
        if isinstance(value, bool) or not isinstance(value, int):
            return False
    elif pa.types.is_floating(type_):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
    elif pa.types.is_boolean(type_):
        if not isinstance(value, bool):
            return False
    elif pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return isinstance(value, str)
    elif pa.types.is_struct(type_):
        return isinstance(value, dict) and all(value.get(f.name) is None or _fits(value[f.name], f.type) for f in type_)
    elif pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return isinstance(value, list) and all(v is None or _fits(v, type_.value_type) for v in value)
    try:
        pa.array([value], type_)  # range (int32 overflow) and anything else: Arrow decides
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return False
    return True


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _short(value: Any) -> str:
    text = json.dumps(value, default=repr) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- shared -----------------------------------------------------------------------------------------


def _fitted(decoded: list[Any], type_: pa.DataType, errors: list[str | None]) -> Coded:
    """``decoded`` as one Arrow array of ``type_``; a value Arrow refuses (out of range) is null
    and named in ``errors``."""
    try:
        return Coded(pa.array(decoded, type_), errors)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass
    kept = []
    for i, value in enumerate(decoded):
        try:
            pa.array([value], type_)
            kept.append(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
            errors[i] = errors[i] or f"value does not fit {type_}: {e}"
            kept.append(None)
    return Coded(pa.array(kept, type_), errors)
