"""Kafka topics as the benchmark reads them back, with confluent-kafka's plain consumer
(read_committed), no code of any peer: Kafka Streams' output (windowed keys as Kafka's
``TimeWindowedSerializer`` writes them: key bytes, then the window start as 8 big-endian bytes;
counts as Kafka's ``LongSerializer`` does) and its repartition topic (JSON values)."""

from __future__ import annotations

import struct

import pandas as pd
import pyarrow as pa
import pyarrow.json as pj

_LONG = struct.Struct(">q")
_VALUE = pa.schema([("user_id", pa.string()), ("page_id", pa.string()), ("category", pa.string()), ("duration_s", pa.int32())])


def read_topic(bootstrap_servers: str, topic: str) -> list[tuple[int, list]]:
    """Every partition's committed records, in offset order: (partition, [messages])."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "peers-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        if not partitions:
            raise RuntimeError(f"Kafka topic {topic} at {bootstrap_servers} has no partitions")
        out = []
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
            messages: list = []
            consumer.assign([TopicPartition(topic, p, low)])
            at_end = high <= low
            while not at_end:
                for m in consumer.consume(num_messages=50_000, timeout=1.0):
                    if m.error() is None:
                        messages.append(m)
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        at_end = True
                    else:
                        raise RuntimeError(f"reading Kafka topic {topic} partition {p}: {m.error()}")
            out.append((p, messages))
        return out
    finally:
        consumer.close()


def kafka_streams_output(bootstrap_servers: str, topic: str, window_ms: int) -> pd.DataFrame:
    """The latest count of every window in Kafka Streams' output topic."""
    rows = []
    for p, messages in read_topic(bootstrap_servers, topic):
        for m in messages:
            key = m.key()
            rows.append((p, m.offset(), key[:-8].decode(), _LONG.unpack(key[-8:])[0], _LONG.unpack(m.value())[0]))
    frame = pd.DataFrame(rows, columns=["partition", "offset", "category", "window_start", "count"])
    latest = frame.sort_values(["partition", "offset"]).drop_duplicates(["category", "window_start"], keep="last")
    latest = latest.assign(window_end=latest["window_start"] + window_ms)
    return latest[["category", "window_start", "window_end", "count"]].sort_values(["window_start", "category"]).reset_index(drop=True)


def read_repartition(bootstrap_servers: str, topic: str) -> pd.DataFrame:
    """Kafka Streams' repartition records: partition, offset, timestamp and the JSON value's fields."""
    frames = []
    for p, messages in read_topic(bootstrap_servers, topic):
        if not messages:
            continue
        values = pj.read_json(pa.BufferReader(b"\n".join(m.value() for m in messages)), parse_options=pj.ParseOptions(explicit_schema=_VALUE))
        frame = values.to_pandas()
        frame.insert(0, "partition", p)
        frame.insert(1, "offset", [m.offset() for m in messages])
        frame.insert(2, "timestamp", [m.timestamp()[1] for m in messages])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
