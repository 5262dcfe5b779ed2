"""Waiting for what a Kafka broker does after a call returns."""

from __future__ import annotations

import time


def eventually(read, expected, timeout_s: float = 10.0):
    """``read()`` until it returns ``expected`` or the timeout passes; its last value. For a
    partition's stable end after a transaction's commit: ``commit_transaction`` returns once the
    coordinator has logged the decision, and the commit markers are written after that, so the
    end moves a moment later (CI once read the old end right after the commit)."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def settled_end_offsets(topic, partitions, timeout_s: float = 10.0) -> dict[int, int]:
    """Per partition, the end a read_committed reader sees once no transaction is open in it:
    the last stable offset, waited for until it reaches the high watermark. For reading what an
    application published right after it stopped (its last commit's markers may still be on
    their way: CI once read an empty sink that way)."""
    from confluent_kafka import Consumer, TopicPartition

    uncommitted = Consumer({"bootstrap.servers": topic.bootstrap_servers, "group.id": "settled-ends", "isolation.level": "read_uncommitted"})
    committed = topic.consumer()
    try:
        def ends(client):
            return {p: client.get_watermark_offsets(TopicPartition(topic.name, p), timeout=timeout_s, cached=False)[1] for p in partitions}

        high = ends(uncommitted)
        return eventually(lambda: ends(committed), high, timeout_s)
    finally:
        uncommitted.close()
        committed.close()
