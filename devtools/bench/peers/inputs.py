"""The one input every peer reads, in the three places peers read from: deltastreams' Delta topic,
a plain Delta table of the same rows for plain Spark, and a Kafka topic (JSON values, as
``python -m deltastreams.jobs.pageview generate --kafka`` writes them). Same events (same seed), same keys,
timestamps and lateness, same partitions of the Delta topic and the Kafka topic.

Also the steady-stream appenders the latency runs feed each place with
(:class:`deltastreams.jobs.steady.Appender`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from deltastreams.jobs.pageview import INPUT_TOPIC, generate, generate_to_kafka
from deltastreams.jobs.pageview_data import generate_events
from deltastreams.sinks import Topic, partitions_for

SEED = 1
SOURCE_PARTITIONS = 2
EVENTS_PER_APPEND = 50_000
"""Rows per append to the Delta topic and the plain table (each append is one Delta version; in
the plain table one file), as ``deltastreams.devtools.bench.suite`` generates its input."""


@dataclass(frozen=True)
class Inputs:
    events: int
    directory: Path

    @property
    def deltastreams_root(self) -> Path:
        """A root whose ``topics/pageview-events`` is the Delta topic."""
        return self.directory / "deltastreams"

    @property
    def spark_table(self) -> Path:
        return self.directory / "spark-table"

    @property
    def appends(self) -> int:
        return -(-self.events // EVENTS_PER_APPEND)


def prepare(base: Path, events: int) -> Inputs:
    """The Delta topic and the plain table under ``base/input-<events>``, generated unless a
    previous run left them complete."""
    inputs = Inputs(events, base / f"input-{events}")
    done = inputs.directory / "complete"
    if done.exists():
        return inputs
    shutil.rmtree(inputs.directory, ignore_errors=True)
    inputs.directory.mkdir(parents=True)
    generate(str(inputs.deltastreams_root), events, seed=SEED, partitions=SOURCE_PARTITIONS, batches=inputs.appends)
    from deltalake import write_deltalake

    rows = plain_rows(records(events))
    for start in range(0, events, EVENTS_PER_APPEND):
        write_deltalake(str(inputs.spark_table), rows.slice(start, EVENTS_PER_APPEND), mode="append")
    done.touch()
    return inputs


def records(events: int) -> pa.Table:
    """The events in record form (key, value, timestamp), in append order."""
    return generate_events(events, seed=SEED)


def plain_rows(records: pa.Table) -> pa.Table:
    """Record form as a plain table's rows: timestamp (epoch ms), user_id, page_id, category, duration_s."""
    value = records.column("value").combine_chunks()
    return pa.table({"timestamp": records.column("timestamp"), **{name: value.field(name) for name in ("user_id", "page_id", "category", "duration_s")}})


def produce_to_kafka(bootstrap_servers: str, events: int) -> None:
    generate_to_kafka(bootstrap_servers, events, seed=SEED, partitions=SOURCE_PARTITIONS)


def source_frame(events: int) -> pd.DataFrame:
    """Every event with where each place holds it: ``partition`` and ``offset`` (the Delta topic
    and the Kafka topic: Kafka's partitioner over the key, dense offsets in append order) and
    ``append`` (the plain table's version), plus timestamp, user_id, page_id, category,
    duration_s. Derived from the generator, not read back from any peer's input."""
    return frame_of(records(events), np.arange(events) // EVENTS_PER_APPEND)


def frame_of(records: pa.Table, append: np.ndarray) -> pd.DataFrame:
    """``records`` (record form, in append order) as :func:`source_frame` describes, ``append``
    being each record's append (the plain table's version)."""
    partition = partitions_for(records.column("key"), SOURCE_PARTITIONS)
    frame = plain_rows(records).to_pandas()
    frame.insert(0, "partition", partition)
    frame.insert(1, "offset", frame.groupby("partition").cumcount().astype(np.int64))
    frame["append"] = append
    return frame


def check_topic_holds(inputs: Inputs, frame: pd.DataFrame) -> None:
    """The Delta topic holds exactly ``frame``'s events at their partitions and offsets (what the
    references assume of every peer's input)."""
    topic = Topic.open(str(inputs.deltastreams_root), INPUT_TOPIC).read()
    held = pd.DataFrame({c: topic.column(c).to_numpy(zero_copy_only=False) for c in ("partition", "offset", "timestamp")})
    held["category"] = topic.column("value").combine_chunks().field("category").to_numpy(zero_copy_only=False)
    held = held.sort_values(["partition", "offset"]).reset_index(drop=True)
    expected = frame[["partition", "offset", "timestamp", "category"]].sort_values(["partition", "offset"]).reset_index(drop=True)
    if not held.astype({"partition": "int64"}).equals(expected.astype({"partition": "int64"})):
        raise AssertionError(f"the Delta topic under {inputs.deltastreams_root} does not hold the generated events")


# -- steady streams (latency) -------------------------------------------------------------------


class KafkaAppender:
    """Produces each append to the Kafka topic (JSON values, Kafka's partitioner) and waits until
    the broker acknowledged all of it."""

    def __init__(self, bootstrap_servers: str, topic: str = INPUT_TOPIC) -> None:
        from confluent_kafka import Producer

        from deltastreams.sinks.kafka import create_kafka_topic

        from deltastreams.jobs.pageview import kafka_input_topic

        self.topic = kafka_input_topic(bootstrap_servers)
        self.partitions = create_kafka_topic(self.topic, SOURCE_PARTITIONS)
        self.producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "linger.ms": 2})

    def first_index(self) -> int:
        return 0

    def append(self, events: pa.Table) -> None:
        from deltastreams.sinks.kafka import encode

        targets = partitions_for(events.column("key"), self.partitions)
        keys = encode(events.column("key").to_pylist(), "string")
        values = encode(events.column("value").to_pylist(), "json")
        for key, value, stamp, partition in zip(keys, values, events.column("timestamp").to_pylist(), targets, strict=True):
            while True:
                try:
                    self.producer.produce(self.topic.name, value=value, key=key, partition=int(partition), timestamp=stamp)
                    break
                except BufferError:
                    self.producer.poll(0.01)
        if self.producer.flush(30):
            raise RuntimeError("the steady Kafka producer could not deliver an append in 30 s")


class DeltaTableAppender:
    """Appends each batch of events to a plain Delta table as one version of one file. The table
    is created empty first (version 0), so a streaming reader can start before the first append."""

    def __init__(self, path: Path) -> None:
        from deltalake import write_deltalake

        self.path = str(path)
        write_deltalake(self.path, plain_rows(generate_events(0)), mode="append")

    def first_index(self) -> int:
        return 0

    def append(self, events: pa.Table) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.path, plain_rows(events), mode="append")


class RecordingAppender:
    """Another appender, keeping what it appended (in memory) for the correctness check."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.appended: list[pa.Table] = []

    def first_index(self) -> int:
        return self.inner.first_index()

    def append(self, events: pa.Table) -> None:
        self.inner.append(events)
        self.appended.append(events)

    def frame(self, first_append: int) -> pd.DataFrame:
        """What was appended, as :func:`source_frame` describes it; ``first_append``: the plain
        table's version of the first append."""
        if not self.appended:
            return frame_of(generate_events(0), np.zeros(0, np.int64))
        append = np.concatenate([np.full(t.num_rows, first_append + i) for i, t in enumerate(self.appended)])
        return frame_of(pa.concat_tables(self.appended), append)
