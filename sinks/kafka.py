"""Kafka topics as the log beside Delta topics, through confluent-kafka (librdkafka).

A Kafka topic is read by offset range, partition by partition, with ``assign()`` (no consumer
group: which offsets a batch reads is the application's decision, kept in its transaction log),
into the same *record form* Delta topics give (``partition``, ``offset``, ``timestamp``, ``key``,
``value``, ``headers``), with keys and values decoded by a format: ``bytes``, ``string`` (UTF-8),
``json`` (into the declared Arrow type, or inferred), ``long`` / ``int`` (Kafka's big-endian
Long/IntegerSerializer). A record that cannot be decoded keeps null key/value and is marked in the
``_rejected`` column with the reason, so it reaches the dead-letter topic, never vanishes.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from deltastreams.conf.errors import ConfigError, TopicError, TopicNotFoundError
from deltastreams.sinks._internal import kafka_arrow, kafka_wire
from deltastreams.sinks._internal.files import OFFSET, PARTITION, TIMESTAMP
from deltastreams.sinks.partitioner import partitions_for
from deltastreams.sinks.serde import HEADERS, HEADERS_TYPE

KEY, VALUE, REJECTED = "key", "value", "_rejected"
FORMATS = ("bytes", "string", "json", "long", "int")
_LONG, _INT = struct.Struct(">q"), struct.Struct(">i")
# UnicodeEncodeError: a lone surrogate, which json.loads lets through from "\\ud800"
_DOES_NOT_FIT = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, UnicodeEncodeError)
_JSON_KINDS = {list: "array", str: "string", bool: "boolean"}
_DEFAULT_TYPES = {"bytes": pa.binary(), "string": pa.string(), "long": pa.int64(), "int": pa.int32()}


class OffsetOutOfRangeError(TopicError):
    """The offsets a sub-topology must read next are no longer in the Kafka topic (deleted by
    retention, or the topic was recreated). Set ``kafka.on_missing_offsets`` to ``earliest`` to
    resume from the oldest offset still there (the gap is logged), or reset the application."""


@dataclass(frozen=True)
class KafkaTopic:
    """Where a logical topic lives in Kafka and how its bytes become keys and values."""

    bootstrap_servers: str
    name: str
    """The Kafka topic's name."""
    key_format: str = "string"
    value_format: str = "string"
    key_type: pa.DataType | None = None
    """The Arrow type keys decode to (``json``: the declared type, else inferred per batch)."""
    value_type: pa.DataType | None = None
    client: Mapping[str, Any] = field(default_factory=dict)
    """More librdkafka settings (security, timeouts)."""

    def __post_init__(self) -> None:
        for what, fmt in (("key_format", self.key_format), ("value_format", self.value_format)):
            if fmt not in FORMATS:
                raise ConfigError(f"kafka.{what} must be one of {list(FORMATS)}, got {fmt!r}", setting=f"kafka.{what}")

    def consumer_settings(self) -> dict[str, Any]:
        # A group id is required by librdkafka's consumer even without subscribing; nothing is
        # ever committed to it: positions live in the application's transaction log.
        settings = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": "deltastreams-reader",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
            # librdkafka stops fetching a partition whose local queue holds queued.min.messages
            # (100k) and looks again only after this backoff, 1 s by default: a read of a range
            # over 100k records sat idle most of its time (one partition's 501k records: 1.5-2.4 s,
            # 0.6 s of it CPU; with 10 ms, 0.41-0.44 s). The queue's bounds stay as they are.
            "fetch.queue.backoff.ms": 10,
        }
        return {**settings, **self.client}

    def consumer(self):
        from confluent_kafka import Consumer

        return Consumer(self.consumer_settings())

    def record_schema(self) -> pa.Schema:
        key_type = self.key_type or _DEFAULT_TYPES.get(self.key_format, pa.string())
        value_type = self.value_type or _DEFAULT_TYPES.get(self.value_format, pa.string())
        return pa.schema([
            pa.field(PARTITION, pa.int32()), pa.field(OFFSET, pa.int64()), pa.field(TIMESTAMP, pa.int64()),
            pa.field(KEY, key_type), pa.field(VALUE, value_type), pa.field(HEADERS, HEADERS_TYPE), pa.field(REJECTED, pa.string()),
        ])


def partition_count(topic: KafkaTopic, timeout_s: float = 10.0) -> int:
    # Asked over a connection the reader keeps where it can: a librdkafka client for the question
    # alone took ~70 ms of an application's start.
    count = kafka_wire.partition_count(topic.consumer_settings(), topic.name, timeout_s)
    if count:
        return count
    consumer = topic.consumer()
    try:
        metadata = consumer.list_topics(topic.name, timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - librdkafka's KafkaException says little on its own
        raise TopicError(f"cannot reach Kafka at {topic.bootstrap_servers} to read topic '{topic.name}': {e}", topic=topic.name) from e
    finally:
        consumer.close()
    found = metadata.topics.get(topic.name)
    if found is None or found.error is not None or not found.partitions:
        reason = found.error if found is not None and found.error is not None else "no such topic"
        raise TopicNotFoundError(f"Kafka topic '{topic.name}' at {topic.bootstrap_servers}: {reason}; create it first", topic=topic.name)
    return len(found.partitions)


def watermarks(topic: KafkaTopic, partitions: Sequence[int], timeout_s: float = 10.0, *, consumer=None) -> dict[int, tuple[int, int]]:
    """Per partition, ``(low, high)``: the oldest offset still there and the next to be written
    (with read_committed, the last stable offset). ``consumer``: a client of ``topic.consumer()``
    to ask with (one asking often keeps one), else a client for this call only."""
    from confluent_kafka import TopicPartition

    client = consumer if consumer is not None else topic.consumer()
    try:
        return {p: client.get_watermark_offsets(TopicPartition(topic.name, p), timeout=timeout_s, cached=False) for p in partitions}
    except Exception as e:  # noqa: BLE001
        raise TopicError(f"cannot read the offsets of Kafka topic '{topic.name}' at {topic.bootstrap_servers}: {e}", topic=topic.name) from e
    finally:
        if consumer is None:
            client.close()


def end_offsets(topic: KafkaTopic, partitions) -> dict[int, int]:
    """Per partition, the offset the next record will get."""
    return {p: high for p, (_, high) in watermarks(topic, list(partitions)).items()}


def create_kafka_topic(topic: KafkaTopic, partitions: int, timeout_s: float = 10.0) -> int:
    """Create the Kafka topic with ``partitions`` unless it exists; returns its partition count."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": topic.bootstrap_servers, **{k: v for k, v in topic.client.items() if k.startswith(("security.", "sasl.", "ssl."))}})
    try:
        admin.create_topics([NewTopic(topic.name, partitions, 1)])[topic.name].result(timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - librdkafka wraps the broker's error
        error = e.args[0] if e.args else None
        if getattr(error, "code", lambda: None)() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise TopicError(f"cannot create Kafka topic '{topic.name}' at {topic.bootstrap_servers}: {e}", topic=topic.name) from e
    # The controller has created it, but the broker answering metadata may not know yet: an
    # application creating its sink topic failed with "unknown topic" right after creating it.
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return partition_count(topic, timeout_s)
        except TopicNotFoundError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def read_range(topic: KafkaTopic, partition: int, start: int, end: int, timeout_s: float = 60.0, *, reader: str = "auto") -> pa.Table:
    """The records of ``partition`` with offsets in ``[start, end)``, in record form. Offsets
    inside the range may be missing (transaction markers, compaction); reading stops once the
    consumer's position reaches ``end``. ``reader``: ``auto`` fetches the range itself and decodes
    its batches in C (:mod:`~deltastreams.sinks._internal.kafka_wire`) where it can, else reads
    through librdkafka in C (``librdkafka``: :mod:`~deltastreams.sinks._internal.kafka_arrow`),
    else (``python``) through confluent-kafka's Message objects; all give the same table."""
    if end <= start:
        return _records(topic, partition, [])
    raw = None
    if reader == "auto":
        try:
            raw = kafka_wire.read_wire(topic.consumer_settings(), topic.name, partition, start, end, timeout_s)
        except kafka_arrow.RangeReadError as e:
            raise _range_read_error(topic, partition, start, end, timeout_s, e) from None
    if raw is None and reader in ("auto", "librdkafka"):
        try:
            raw = kafka_arrow.read_raw(topic.consumer_settings(), topic.name, partition, start, end, timeout_s)
        except kafka_arrow.RangeReadError as e:
            raise _range_read_error(topic, partition, start, end, timeout_s, e) from None
    if raw is not None:
        return _records_from_columns(topic, partition, raw)
    return _read_range_in_python(topic, partition, start, end, timeout_s)


def _range_read_error(topic: KafkaTopic, partition: int, start: int, end: int, timeout_s: float, e: kafka_arrow.RangeReadError) -> TopicError:
    if e.kind == "offset_out_of_range":
        return _offsets_gone(topic, partition, start)
    if e.kind == "timed_out":
        return _read_timed_out(topic, partition, start, end, timeout_s, e.rows)
    return TopicError(f"reading Kafka topic '{topic.name}' partition {partition}: {e.detail}", topic=topic.name)


def close_readers() -> None:
    """Close the consumers and connections the C readers keep between reads of a partition in
    this process (each holds a connection, a consumer fetches ahead); those idle a minute are
    closed at the next read, the rest at exit. Call it before the brokers go away, or a kept
    consumer logs that it cannot reconnect."""
    kafka_arrow.close_consumers()
    kafka_wire.close_connections()


def c_reader_available() -> bool:
    """Whether :func:`read_range` reads with the C reader (built when deltastreams was installed
    with a C compiler, and librdkafka found); else it reads through Python objects."""
    return kafka_arrow.reader() is not None


def _offsets_gone(topic: KafkaTopic, partition: int, start: int) -> OffsetOutOfRangeError:
    return OffsetOutOfRangeError(
        f"Kafka topic '{topic.name}' partition {partition}: offset {start} is no longer there (retention or a recreated topic)",
        topic=topic.name,
    )


def _read_timed_out(topic: KafkaTopic, partition: int, start: int, end: int, timeout_s: float, rows: int) -> TopicError:
    return TopicError(
        f"reading Kafka topic '{topic.name}' partition {partition} offsets [{start}, {end}) took over {timeout_s:.0f} s "
        f"(got {rows} records); is the broker at {topic.bootstrap_servers} up?",
        topic=topic.name,
    )


def _read_range_in_python(topic: KafkaTopic, partition: int, start: int, end: int, timeout_s: float) -> pa.Table:
    import time

    from confluent_kafka import KafkaError, TopicPartition

    rows: list[Any] = []
    consumer = topic.consumer()
    deadline = time.monotonic() + timeout_s
    try:
        consumer.assign([TopicPartition(topic.name, partition, start)])
        expected = start  # the next offset a record can have
        while True:
            # consume() waits until it has num_messages or the timeout passes: asking for more than
            # the range still holds made every read wait out the timeout (0.5 s per task and batch
            # on a steady stream). Transaction markers and compaction leave gaps, so fewer records
            # than asked may remain: the short timeout bounds that wait.
            for message in consumer.consume(num_messages=max(1, min(10_000, end - expected)), timeout=0.1):
                error = message.error()
                if error is None:
                    if message.offset() < end:
                        rows.append(message)
                        expected = message.offset() + 1
                    continue
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                # With auto.offset.reset=error librdkafka reports a fetch outside the partition's
                # offsets as _AUTO_OFFSET_RESET, wrapping the broker's OFFSET_OUT_OF_RANGE.
                if error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                    raise _offsets_gone(topic, partition, start)
                raise TopicError(f"reading Kafka topic '{topic.name}' partition {partition}: {error}", topic=topic.name)
            if (rows and rows[-1].offset() >= end - 1) or _position(consumer, topic.name, partition) >= end:
                break
            if time.monotonic() > deadline:
                raise _read_timed_out(topic, partition, start, end, timeout_s, len(rows))
    finally:
        consumer.close()
    return _records(topic, partition, rows)


def _position(consumer, name: str, partition: int) -> int:
    from confluent_kafka import TopicPartition

    position = consumer.position([TopicPartition(name, partition)])[0].offset
    return position if position >= 0 else -1


def _records(topic: KafkaTopic, partition: int, messages: list) -> pa.Table:
    schema = topic.record_schema()
    keys, key_errors = _decode([m.key() for m in messages], topic.key_format, schema.field(KEY).type)
    values, value_errors = _decode([m.value() for m in messages], topic.value_format, schema.field(VALUE).type)
    stamps = [m.timestamp()[1] if m.timestamp()[0] != 0 else -1 for m in messages]  # 0: TIMESTAMP_NOT_AVAILABLE
    headers = [None if not m.headers() else [{"key": k, "value": v if v is not None else b""} for k, v in m.headers()] for m in messages]
    return pa.table(
        [pa.array([partition] * len(messages), pa.int32()), pa.array([m.offset() for m in messages], pa.int64()), pa.array(stamps, pa.int64()),
         keys, values, pa.array(headers, HEADERS_TYPE), _rejections(key_errors, value_errors)],
        schema=schema,
    )


def _records_from_columns(topic: KafkaTopic, partition: int, raw: kafka_arrow.RawRecords) -> pa.Table:
    schema = topic.record_schema()
    keys, key_errors = _decode_column(raw.keys, topic.key_format, schema.field(KEY).type)
    values, value_errors = _decode_column(raw.values, topic.value_format, schema.field(VALUE).type)
    count = len(raw.offsets)
    # The partition's column from its buffer: pa.array() of a NumPy array imports pandas (~0.2 s
    # of CPU, in every task host's first Kafka read).
    return pa.table(
        [pa.Array.from_buffers(pa.int32(), count, [None, pa.py_buffer(np.full(count, partition, np.int32))]), raw.offsets, raw.timestamps, keys, values, raw.headers, _rejections(key_errors, value_errors)],
        schema=schema,
    )


def _rejections(key_errors: list[str | None], value_errors: list[str | None]) -> pa.Array:
    if not any(key_errors) and not any(value_errors):
        return pa.nulls(len(key_errors), pa.string())
    return pa.array(
        [
            None if k is None and v is None else "; ".join(e for e in (k and f"key: {k}", v and f"value: {v}") if e)
            for k, v in zip(key_errors, value_errors, strict=True)
        ],
        pa.string(),
    )


def _decode_column(raw: pa.Array, fmt: str, target: pa.DataType) -> tuple[pa.Array, list[str | None]]:
    decoded = kafka_arrow.decode_column(raw, fmt, target)
    if decoded is not None:
        return decoded, [None] * len(raw)
    return _decode_each(raw.to_pylist(), fmt, target)


def _decode(raw: list[bytes | None], fmt: str, target: pa.DataType) -> tuple[pa.Array, list[str | None]]:
    """Decoded values (null where undecodable) and, per record, why it could not be decoded."""
    if fmt == "bytes":
        return pa.array(raw, pa.binary()), [None] * len(raw)
    if fmt == "json" and pa.types.is_struct(target):  # column-wise, as from the reader in C
        return _decode_column(pa.array(raw, pa.binary()), fmt, target)
    return _decode_each(raw, fmt, target)


def _decode_each(raw: list[bytes | None], fmt: str, target: pa.DataType) -> tuple[pa.Array, list[str | None]]:
    """:func:`_decode` one record at a time: the path that names each record it rejects."""
    errors: list[str | None] = [None] * len(raw)
    decoded: list[Any] = []
    for i, data in enumerate(raw):
        if data is None:
            decoded.append(None)
            continue
        try:
            if fmt == "string":
                decoded.append(data.decode("utf-8"))
            elif fmt == "json":
                decoded.append(_json_value(data, target))
            elif fmt == "long":
                decoded.append(_LONG.unpack(data)[0])
            else:
                decoded.append(_INT.unpack(data)[0])
        except (UnicodeDecodeError, ValueError, struct.error) as e:
            errors[i] = f"not {fmt}: {type(e).__name__}: {e}"
            decoded.append(None)
    try:
        return pa.array(decoded, target), errors
    except _DOES_NOT_FIT:
        pass
    array = []
    for i, value in enumerate(decoded):  # one by one: name the records that do not fit
        try:
            pa.array([value], target)
            array.append(value)
        except _DOES_NOT_FIT as e:
            errors[i] = f"does not fit {target}: {e}"
            array.append(None)
    return pa.array(array, target), errors


def _json_value(data: bytes, target: pa.DataType) -> Any:
    value = json.loads(data)
    if pa.types.is_struct(target) and value is not None and not isinstance(value, dict):
        # pyarrow would take a list (of pairs, or empty) for a struct
        raise ValueError(f"a JSON {_JSON_KINDS.get(type(value), 'number')}, not an object")
    return value


# -- writing ---------------------------------------------------------------------------------------


def encode(values: Sequence[Any], fmt: str) -> list[bytes | None]:
    """Values as Kafka bytes in ``fmt`` (the inverse of decoding)."""
    if fmt == "bytes":
        return list(values)
    if fmt == "string":
        return [None if v is None else str(v).encode("utf-8") for v in values]
    if fmt == "json":
        return [None if v is None else json.dumps(v, separators=(",", ":"), sort_keys=True).encode("utf-8") for v in values]
    packer = _LONG if fmt == "long" else _INT
    return [None if v is None else packer.pack(v) for v in values]


def producer_settings(topic: KafkaTopic) -> dict[str, Any]:
    """librdkafka producer settings: idempotent, and Java's partitioner (murmur2) where a record
    names no partition; librdkafka's own batching (``kafka.client.*`` overrides any of it)."""
    return {
        "bootstrap.servers": topic.bootstrap_servers,
        "enable.idempotence": True,
        "partitioner": "murmur2_random",
        **topic.client,
    }


def produce(topic: KafkaTopic, records: pa.Table, partitions: int, timeout_s: float = 60.0) -> int:
    """Append record-form ``records`` (``key``, ``value``, ``timestamp``, optional ``partition``
    and ``headers``) to the Kafka topic, each to the partition a Delta topic would give it
    (Kafka's partitioner over the key bytes), in order per partition; waits until all are
    acknowledged. Returns how many were written."""
    from confluent_kafka import Producer

    producer = Producer(producer_settings(topic))
    if PARTITION in records.column_names:
        targets = records.column(PARTITION).to_numpy(zero_copy_only=False)
    else:
        targets = partitions_for(records.column(KEY), partitions)
    keys = encode(records.column(KEY).to_pylist(), topic.key_format)
    values = encode(records.column(VALUE).to_pylist(), topic.value_format)
    stamps = records.column(TIMESTAMP).to_pylist()
    headers = records.column(HEADERS).to_pylist() if HEADERS in records.column_names else [None] * len(keys)
    failures: list[str] = []

    def delivered(error, _message) -> None:
        if error is not None:
            failures.append(str(error))

    for i, (key, value, stamp, partition) in enumerate(zip(keys, values, stamps, targets, strict=True)):
        item_headers = None if not headers[i] else [(h["key"], h["value"]) for h in headers[i]]
        while True:
            try:
                producer.produce(topic.name, value=value, key=key, partition=int(partition), timestamp=stamp or 0, headers=item_headers, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(timeout_s)
    if remaining or failures:
        raise TopicError(
            f"producing to Kafka topic '{topic.name}' at {topic.bootstrap_servers}: {remaining} records unacknowledged, "
            f"{len(failures)} failed{': ' + failures[0] if failures else ''}",
            topic=topic.name,
        )
    return len(keys)

