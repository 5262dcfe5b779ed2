"""Exactly-once into Kafka, checked from outside the sink: every record of a Delta output topic is
in the Kafka topic it is mirrored to exactly once, partition by partition, in the Delta topic's
offset order, and Kafka holds nothing else, for a ``read_committed`` reader.

The Delta side is read with deltalake, the Kafka side with confluent-kafka's plain consumer; no
code of the sink (:mod:`deltastreams.sinks.kafka`, :mod:`deltastreams.sinks.kafka_publisher`) is used. What the sink must
have written is spelled out here again: the key's UTF-8 bytes, followed for a windowed key by the
window start as 8 big-endian bytes (Kafka's ``TimeWindowedSerializer``), the value as JSON, the
record's timestamp and headers.

    python -m deltastreams.devtools.harness.kafka_sink_check --root R --topic pageview-windowed-counts --key-column category --value-column count --kafka HOST:PORT
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

_START = struct.Struct(">q")


class MirrorCheckError(RuntimeError):
    """The check cannot run: no such Delta topic, or Kafka unreachable or without the topic."""


@dataclass
class MirrorCheck:
    topic: str
    partitions: int = 0
    records: int = 0
    """Records of the Delta output topic checked."""
    kafka_records: int = 0
    """Records a read_committed reader gets from the Kafka topic."""
    aborted_records: int = 0
    """Records in the Kafka topic's log that read_committed readers skip: aborted transactions
    (a kill inside a Kafka transaction leaves them)."""
    violations: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.topic}: {self.records} Delta records in {self.partitions} partitions checked against {self.kafka_records} read_committed "
            f"Kafka records ({self.aborted_records} aborted records in Kafka's log, skipped); violations: {len(self.violations)}"
        )


def check_mirror(
    root: str | Path, topic: str, bootstrap_servers: str, *, key_column: str, value_column: str, kafka_topic: str | None = None, timeout_s: float = 60.0
) -> MirrorCheck:
    """``key_column`` / ``value_column``: the Delta columns holding the records' keys and values
    (the pageview job's counts: ``category`` and ``count``)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    result = MirrorCheck(topic)
    path = Path(root) / "topics" / topic
    try:
        table = DeltaTable(str(path)).to_pyarrow_table()
    except TableNotFoundError as e:
        raise MirrorCheckError(f"no Delta topic at {path}: check --root and --topic") from e
    for column in ("partition", "offset", "timestamp", key_column, value_column):
        if column not in table.column_names:
            raise MirrorCheckError(f"the Delta topic at {path} has no column {column!r} (it has {table.column_names})")
    partitions = _partition_count(bootstrap_servers, kafka_topic or topic, timeout_s)
    result.partitions = partitions
    for partition in range(partitions):
        want = _delta_records(table, partition, key_column, value_column)
        committed = _kafka_records(bootstrap_servers, kafka_topic or topic, partition, "read_committed", timeout_s)
        everything = _kafka_records(bootstrap_servers, kafka_topic or topic, partition, "read_uncommitted", timeout_s)
        result.records += len(want)
        result.kafka_records += len(committed)
        result.aborted_records += len(everything) - len(committed)
        if committed != want:
            result.violations.append(f"partition {partition}: {_difference(want, committed)}")
    return result


def _delta_records(table, partition: int, key_column: str, value_column: str) -> list[tuple]:
    import pyarrow.compute as pc

    rows = table.filter(pc.equal(table["partition"], partition)).sort_by("offset").to_pylist()
    records = []
    for row in rows:
        key = None if row[key_column] is None else str(row[key_column]).encode("utf-8")
        if key is not None and "window_start" in row:
            key += _START.pack(row["window_start"])
        headers = tuple((h["key"], h["value"]) for h in row.get("headers") or ())
        records.append((key, row[value_column], row["timestamp"], headers))
    return records


def _kafka_records(bootstrap_servers: str, topic: str, partition: int, isolation: str, timeout_s: float) -> list[tuple]:
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers, "group.id": "deltastreams-kafka-sink-check", "enable.auto.commit": False,
        "isolation.level": isolation, "enable.partition.eof": True,
    })
    records = []
    try:
        # read_committed: the last stable offset; an open transaction would hold it back, and
        # what follows it would count as missing.
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s, cached=False)
        if isolation == "read_committed":
            end = _settled_end(consumer, bootstrap_servers, topic, partition, end, timeout_s)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        done = end == 0
        while not done:
            for message in consumer.consume(1000, timeout=0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        done = True
                        continue
                    raise MirrorCheckError(f"reading Kafka topic {topic!r} partition {partition}: {error}")
                if message.offset() < end:
                    value = message.value()
                    records.append((message.key(), None if value is None else json.loads(value), message.timestamp()[1], tuple(message.headers() or ())))
                if message.offset() >= end - 1:
                    done = True
            if not done and time.monotonic() > deadline:
                raise MirrorCheckError(f"reading Kafka topic {topic!r} partition {partition} up to offset {end} took over {timeout_s:.0f} s")
    finally:
        consumer.close()
    return records


def _settled_end(consumer, bootstrap_servers: str, topic: str, partition: int, stable: int, timeout_s: float) -> int:
    """The last stable offset once the last commit's markers are written: a producer's
    ``commit_transaction`` returns when the coordinator has logged the decision, the markers
    follow, so right after an application stops the stable end may still lag the high watermark
    (a check would count its last batch as missing). Waits up to ``timeout_s`` for the two to
    meet; a transaction still open after that (a zombie's) keeps the stable end it has."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    everything = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "deltastreams-kafka-sink-check", "isolation.level": "read_uncommitted"})
    try:
        _, high = everything.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s, cached=False)
    finally:
        everything.close()
    deadline = time.monotonic() + timeout_s
    while stable < high and time.monotonic() < deadline:
        time.sleep(0.05)
        _, stable = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s, cached=False)
    return stable


def _partition_count(bootstrap_servers: str, topic: str, timeout_s: float) -> int:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        metadata = AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(topic, timeout=timeout_s).topics.get(topic)
    except KafkaException as e:
        raise MirrorCheckError(f"cannot reach Kafka at {bootstrap_servers}: {e}") from e
    if metadata is None or metadata.error is not None:
        raise MirrorCheckError(f"Kafka topic {topic!r} at {bootstrap_servers}: {metadata.error if metadata is not None else 'no such topic'}")
    return len(metadata.partitions)


def _difference(want: list[tuple], got: list[tuple]) -> str:
    """What is wrong, in numbers, then the first record where the two orders part."""
    wanted, found = Counter(want), Counter(got)
    missing, extra = sum((wanted - found).values()), sum((found - wanted).values())
    duplicated = sum(n - 1 for n in found.values() if n > 1)
    first = next((i for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g), min(len(want), len(got)))
    return (
        f"{len(want)} records in Delta, {len(got)} in Kafka: {missing} missing, {extra} not in Delta, {duplicated} duplicated; "
        f"the first difference at position {first}: Delta {want[first] if first < len(want) else None}, Kafka {got[first] if first < len(got) else None}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--topic", required=True, help="the Delta output topic (also the Kafka topic's name unless --kafka-topic)")
    parser.add_argument("--kafka", required=True, metavar="HOST:PORT")
    parser.add_argument("--key-column", required=True, help="the Delta column of the records' keys")
    parser.add_argument("--value-column", required=True, help="the Delta column of the records' values")
    parser.add_argument("--kafka-topic", default=None)
    args = parser.parse_args(argv)
    try:
        result = check_mirror(args.root, args.topic, args.kafka, key_column=args.key_column, value_column=args.value_column, kafka_topic=args.kafka_topic)
    except MirrorCheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(result.summary())
    for violation in result.violations:
        print(f"  - {violation}")
    return 1 if result.violations else 0


if __name__ == "__main__":
    sys.exit(main())
