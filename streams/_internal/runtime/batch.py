"""What the driver tells every task of a micro-batch, and what each task reports back.

A :class:`BatchSpec` travels to the executors inside the task closure (it is small: topic
addresses, next offsets, changelog positions). A :class:`TaskOutcome` travels back as one JSON
string per task; only file metadata and metrics cross, never records.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field

import pyarrow as pa

from sinks._internal.files import DataFile
from sinks.topics import TopicLayout
from state.task_stores import ChangelogPosition
from topology.graph import Topology


@dataclass(frozen=True)
class TopicTarget:
    """An output topic as the tasks of a batch see it."""

    logical: str
    physical: str
    uri: str
    partitions: int
    layout: TopicLayout | None
    """None while the topic does not exist yet: the first writer's records decide its types."""
    key_column: str = "key"
    value_column: str = "value"
    next_offsets: tuple[int, ...] = ()
    """Where each partition ends now: where this batch's records start."""
    staging: bool = False
    """Several tasks write each partition (a repartition topic): write Arrow IPC to be merged."""

    def layout_for(self, schema: pa.Schema) -> TopicLayout:
        """The topic's layout, or the one records of ``schema`` give it if it does not exist yet."""
        if self.layout is not None:
            return self.layout
        return TopicLayout.of(
            partitions=self.partitions,
            key_type=schema.field("key").type,
            value_type=schema.field("value").type,
            key_column=self.key_column,
            value_column=self.value_column,
            windowed="window_start" in schema.names,
        )


@dataclass(frozen=True)
class BatchSpec:
    application_id: str
    state_dir: str
    batch_id: int
    attempt: str
    topology: Topology
    subtopology: int
    source: TopicTarget
    """The sub-topology's source topic (tasks in descriptor mode read its files)."""
    entry: str | None
    """Last node already applied before the core runs (the compiled Catalyst prefix), or None."""
    caching: bool
    fail_on_bad_record: bool
    late_records_topic: str | None
    outputs: dict[str, TopicTarget]
    """By logical topic name; includes the dead-letter topic and changelog topics."""
    dead_letter_topic: str
    changelogs: dict[str, str]
    """Store name -> logical name of its changelog topic (a key of ``outputs``)."""
    changelog_positions: dict[str, dict[int, ChangelogPosition]]
    """Store name -> partition -> committed position."""


@dataclass
class WrittenFile:
    topic: str
    """Logical topic name."""
    writer: int
    """Task partition that wrote it: orders writers of one partition."""
    file: DataFile
    schema: str | None = None
    """Arrow schema (base64 IPC) of a topic that did not exist yet."""
    layout: str | None = None

    def to_json(self) -> dict:
        return {"topic": self.topic, "writer": self.writer, "file": asdict(self.file), "schema": self.schema, "layout": self.layout}

    @classmethod
    def from_json(cls, raw: dict) -> WrittenFile:
        return cls(raw["topic"], raw["writer"], DataFile(**raw["file"]), raw["schema"], raw["layout"])


@dataclass
class TaskOutcome:
    partition: int
    files: list[WrittenFile] = field(default_factory=list)
    processed: int = 0
    emitted: int = 0
    dropped_records: int = 0
    dead_letters: int = 0
    restored_entries: int = 0
    restore_seconds: float = 0.0
    process_seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase inside the task: read, restore, process, write."""

    def to_json(self) -> str:
        raw = asdict(self)
        raw["files"] = [f.to_json() for f in self.files]
        return json.dumps(raw)

    @classmethod
    def from_json(cls, text: str) -> TaskOutcome:
        raw = json.loads(text)
        raw["files"] = [WrittenFile.from_json(f) for f in raw["files"]]
        return cls(**raw)


def schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
