"""Publishing a decided batch to Kafka topics in one Kafka transaction, at most once per batch.

A sub-topology's outputs are decided by its own transaction log; the Kafka sink copies each
decided batch's records of its Kafka-bound topics to Kafka. One transactional producer per
sub-topology (``transactional.id`` = ``<application_id>-<sub-topology>-kafka``): a new instance's
``init_transactions`` fences the old one, so a zombie can no longer commit. The batch number
rides in the same Kafka transaction as a consumer-group offset (group ``<transactional.id>``,
partition 0 of the first Kafka topic, offset ``batch_id + 1``, via
``send_offsets_to_transaction``): after a crash, the group's committed offset tells which decided
batches already reached Kafka, so recovery publishes exactly the missing ones.

``on_step`` is called with one of :data:`KILL_POINTS` inside the Kafka transaction, so a test can
kill the process there: the records handed to the producer (not all sent), the records in the
partitions' logs (acknowledged, not committed), the batch number added to the transaction (only
``commit_transaction`` left), and the transaction committed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from deltastreams.conf.errors import TopicError
from deltastreams.sinks.kafka import KafkaTopic, encode, producer_settings
from deltastreams.sinks.partitioner import partitions_for
from deltastreams.sinks.serde import HEADERS

NO_BATCH = -1
_START = struct.Struct(">q")

AFTER_PRODUCE = "after_kafka_produce"
BEFORE_SEND_OFFSETS = "before_kafka_send_offsets"
BEFORE_COMMIT = "before_kafka_commit"
"""After ``send_offsets_to_transaction`` returned (librdkafka's call waits for the group
coordinator), before ``commit_transaction``: nothing runs between the two."""
AFTER_COMMIT = "after_kafka_commit"
KILL_POINTS = (AFTER_PRODUCE, BEFORE_SEND_OFFSETS, BEFORE_COMMIT, AFTER_COMMIT)
"""Every point ``on_step`` is called at, in the order a batch reaches them."""


class FencedError(TopicError):
    """Another instance of this application took over the sub-topology's Kafka producer (its
    ``transactional.id``); this one must stop: it is a zombie."""


@dataclass
class KafkaPublisher:
    """Publishes the batches of one sub-topology to its Kafka-bound topics."""

    transactional_id: str
    topics: Mapping[str, KafkaTopic]
    """Logical topic -> where and how it is written in Kafka."""
    partitions: Mapping[str, int]
    """Logical topic -> its Kafka partition count (records keep their Delta partition)."""
    on_step: Callable[[str], None] | None = None
    """Called with each of :data:`KILL_POINTS` as a batch passes it (for kill tests)."""
    _producer: Any = field(default=None, repr=False)
    _group: Any = field(default=None, repr=False)
    """A consumer of the group holding the batch numbers (never subscribed): reads the last
    number, and gives the group's metadata each transaction commits its number with."""

    @property
    def _first(self) -> KafkaTopic:
        return self.topics[min(self.topics)]

    def start(self, timeout_s: float = 30.0) -> None:
        """Take over the transactional id (fencing any older holder) and abort what it left open."""
        from confluent_kafka import Consumer, Producer

        settings = {**producer_settings(self._first), "transactional.id": self.transactional_id, "transaction.timeout.ms": 60_000}
        self._producer = Producer(settings)
        self._producer.init_transactions(timeout_s)
        self._group = Consumer({"bootstrap.servers": self._first.bootstrap_servers, "group.id": self.transactional_id, "enable.auto.commit": False})

    def last_published(self, timeout_s: float = 10.0) -> int:
        """The last batch whose Kafka transaction committed (NO_BATCH: none); after :meth:`start`.
        Retries what the broker says is passing (its group coordinator still loading or moving,
        as on a broker that just started), as Kafka's own consumer does, until ``timeout_s``."""
        import time

        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        passing = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                committed = self._group.committed([TopicPartition(self._first.name, 0)], timeout=max(0.1, deadline - time.monotonic()))[0].offset
                return committed - 1 if committed >= 0 else NO_BATCH
            except KafkaException as e:
                error = e.args[0]
                if not (error.retriable() or error.code() in passing) or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def publish(self, batch_id: int, records: Mapping[str, pa.Table], timeout_s: float = 60.0) -> int:
        """Records of one decided batch (per logical topic, record form with ``partition``), in
        one Kafka transaction with the batch number. Returns how many records went out."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        producer = self._producer
        sent = 0
        try:
            producer.begin_transaction()
            for logical, table in records.items():
                sent += self._produce(self.topics[logical], table, self.partitions[logical])
            self._step(AFTER_PRODUCE)
            # Not needed for correctness (commit_transaction flushes): it makes the next point the
            # one where every record is in its partition's log, uncommitted.
            producer.flush(timeout_s)
            self._step(BEFORE_SEND_OFFSETS)
            offsets = [TopicPartition(self._first.name, 0, batch_id + 1)]
            producer.send_offsets_to_transaction(offsets, self._group.consumer_group_metadata(), timeout_s)
            self._step(BEFORE_COMMIT)
            producer.commit_transaction(timeout_s)
        except KafkaException as e:
            error = e.args[0] if e.args else None
            fenced_codes = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
            if error is not None and (error.fatal() or error.code() in fenced_codes):
                # No abort: a fenced producer's abort waits out its timeout, and the newer
                # instance has aborted whatever this one left open.
                raise FencedError(f"the Kafka producer '{self.transactional_id}' was fenced by a newer instance: {error}", topic=self._first.name) from e
            try:
                producer.abort_transaction(timeout_s)
            except KafkaException:
                pass
            raise TopicError(f"publishing batch {batch_id} to Kafka failed: {error}", topic=self._first.name) from e
        self._step(AFTER_COMMIT)
        return sent

    def _step(self, point: str) -> None:
        if self.on_step is not None:
            self.on_step(point)

    def _produce(self, topic: KafkaTopic, table: pa.Table, partitions: int) -> int:
        if not table.num_rows:
            return 0
        if "partition" in table.column_names:
            targets = table.column("partition").to_numpy(zero_copy_only=False)
        else:
            targets = partitions_for(table.column("key"), partitions)
        keys = encode(table.column("key").to_pylist(), topic.key_format)
        if "window_start" in table.column_names:  # Kafka's TimeWindowedSerializer: key, then the window start
            keys = [None if k is None else k + _START.pack(s) for k, s in zip(keys, table.column("window_start").to_pylist(), strict=True)]
        values = encode(table.column("value").to_pylist(), topic.value_format)
        stamps = table.column("timestamp").to_pylist()
        headers = table.column(HEADERS).to_pylist() if HEADERS in table.column_names else [None] * len(keys)
        for i in range(len(keys)):
            item_headers = None if not headers[i] else [(h["key"], h["value"]) for h in headers[i]]
            while True:
                try:
                    self._producer.produce(topic.name, value=values[i], key=keys[i], partition=int(targets[i]), timestamp=stamps[i] or 0, headers=item_headers)
                    break
                except BufferError:
                    self._producer.poll(0.1)
            self._producer.poll(0)
        return len(keys)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
        if self._group is not None:
            self._group.close()
            self._group = None


def publish_missing(publisher: KafkaPublisher, decided: Sequence[tuple[int, Mapping[str, pa.Table]]]) -> list[int]:
    """Publish, in order, the decided batches that have not reached Kafka yet (recovery and the
    normal path alike); returns the batch ids published now."""
    last = publisher.last_published()
    published = []
    for batch_id, records in decided:
        if batch_id > last:
            publisher.publish(batch_id, records)
            published.append(batch_id)
    return published
