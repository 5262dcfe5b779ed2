"""One trigger's plan, built once on the driver, and what each task reports back.

A trigger runs every sub-topology that has input, upstream first, as the stages of one Spark job
(:mod:`deltastreams.streams._internal.spark.job`). The plan says, for every task: which committed files it
reads (new input of external topics, a repartition topic's backlog), which repartition topics'
*fresh* records it merges from the upstream stage of the same job, where each output partition
ends (its next offset), and where each store's changelog stands. Only file metadata travels;
records never reach the driver.

Fresh records are what makes one trigger carry a record across the whole topology: an upstream
task writes its repartition output as *staged* files (Arrow IPC, record form, no offsets yet); the
downstream task of each partition merges the staged files of every upstream writer in event-time
order, writes the merged Parquet file with dense offsets (the file the upstream's commit will
publish), and processes the merged records from memory. The downstream thus works ahead of the
upstream's commit; it commits only after the upstream did, so nothing it wrote is visible unless
the records it read are (see docs/exactly-once.md, "one trigger").
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import pyarrow as pa

from deltastreams.sinks import DataFile, RejectedFile, TopicLayout
from deltastreams.sinks.kafka import KafkaTopic
from deltastreams.sinks.serde import HEADERS
from deltastreams.state import ChangelogPosition
from deltastreams.topology.graph import Topology


@dataclass(frozen=True)
class TopicTarget:
    """A topic the tasks of a batch write, as they see it."""

    logical: str
    physical: str
    uri: str
    partitions: int
    layout: TopicLayout | None
    """None while the topic does not exist yet: the first batch's records decide its types."""
    key_column: str = "key"
    value_column: str = "value"
    next_offsets: tuple[int, ...] = ()
    """Where each partition ends now: where this batch's records start."""
    staged: bool = False
    """A repartition topic: tasks write staged record-form files, merged downstream."""
    transient: bool = False
    """Read once by this application and soon removed or compacted (repartition topics,
    changelogs): written with the fast Parquet profile."""

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
            headers=HEADERS in schema.names,
        )


@dataclass(frozen=True)
class InputFiles:
    """Committed records of one input topic partition that a task reads, in offset order."""

    topic: str
    uri: str
    layout: TopicLayout
    files: tuple[DataFile, ...]
    versions: tuple[int | None, ...] = ()
    """The version that added each file (empty: not known, an internal topic's backlog)."""
    rejected: tuple[RejectedFile, ...] = ()
    """Files of those versions that break the contract for external writers: dead-lettered."""
    checked: bool = False
    """An input topic other writers may append to: its files are read as the contract for
    external writers says (:func:`deltastreams.sinks.read_input`), bad input set apart."""


@dataclass(frozen=True)
class KafkaRead:
    """Records of one Kafka topic partition that a task reads: offsets ``[start, end)``."""

    topic: str
    source: KafkaTopic
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class TaskPlan:
    subtopology: int
    partition: int
    inputs: tuple[InputFiles, ...] = ()
    kafka_inputs: tuple[KafkaRead, ...] = ()
    fresh: tuple[str, ...] = ()
    """Repartition topics whose staged files for this partition come from the upstream stage."""
    changelogs: Mapping[str, ChangelogPosition] = field(default_factory=dict)
    process: bool = True
    """False: merge the fresh records only; the sub-topology runs in a later job (Catalyst mode)."""
    idle_advance_ms: int | None = None
    """Idle close: if the task gets no records, move its stream time this far (wall-clock ms
    since it was last anchored; :mod:`deltastreams.streams._internal.runtime.idle`)."""
    committed_run: str | None = None
    """The run id (``TaskOutcome.run``) of the task's last outcome this driver committed: the
    task host reuses the task's live operators only if they hold exactly that run
    (:mod:`deltastreams.streams._internal.runtime.live_task`). None: build them from the stores."""

    @property
    def task_id(self) -> str:
        return f"{self.subtopology}_{self.partition}"


@dataclass(frozen=True)
class SubtopologyPlan:
    id: int
    tasks: tuple[TaskPlan, ...]
    """One per partition: a task without input or fresh records returns at once."""
    outputs: Mapping[str, TopicTarget]
    """Every topic its tasks may write: sinks, repartition topics (staged), changelogs, the
    dead-letter topic, the late-records topic."""
    merges: Mapping[str, TopicTarget]
    """Fresh repartition topics its tasks merge, with where each partition ends."""
    changelogs: Mapping[str, str]
    """Store name -> logical name of its changelog topic (a key of ``outputs``)."""
    entry: str | None = None
    """Last node of the Catalyst prefix already applied before the core runs, or None."""


@dataclass(frozen=True)
class BatchSettings:
    """What every task of an application needs besides its plan."""

    application_id: str
    state_dir: str
    """The driver's state directory (every host's, unless ``state_under_tmp`` is set)."""
    caching: bool
    fail_on_bad_record: bool
    late_records_topic: str | None
    dead_letter_topic: str
    idle_close: bool = False
    """Idle close is on: tasks report how far their next close is (``TaskOutcome.next_close_ms``)."""
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    """How to reach an object-store root (``StreamsConfig.storage_options``): tasks set them for
    their process before touching a file. Not in the repr: secrets."""
    state_under_tmp: str | None = None
    """Set when each host keeps state under its own temporary directory (an object-store root
    without ``state_dir``: :attr:`deltastreams.conf.StreamsConfig.state_under_tmp`)."""

    def local_state_dir(self) -> str:
        """The state directory on the machine that calls this (a task's host)."""
        if self.state_under_tmp is None:
            return self.state_dir
        return os.path.join(tempfile.gettempdir(), self.state_under_tmp)


_LOADED: dict[str, Topology] = {}


@dataclass(frozen=True)
class ShippedTopology:
    """The topology as executors run it (Spark Column functions replaced by placeholders),
    pickled once on the driver (with cloudpickle: user functions may be lambdas) and unpickled
    once per process that runs tasks."""

    key: str
    blob: bytes

    @classmethod
    def of(cls, topology: Topology) -> ShippedTopology:
        from pyspark import cloudpickle

        blob = cloudpickle.dumps(topology)
        return cls(hashlib.sha1(blob).hexdigest(), blob)

    def load(self) -> Topology:
        if self.key not in _LOADED:
            _LOADED[self.key] = pickle.loads(self.blob)
        return _LOADED[self.key]


@dataclass(frozen=True)
class BatchPlan:
    batch_id: int
    settings: BatchSettings
    shipped: ShippedTopology
    stages: tuple[tuple[SubtopologyPlan, ...], ...]
    """Sub-topologies in dependency order; a stage's tasks take fresh records from earlier ones."""

    def subtopology(self, sub_id: int) -> SubtopologyPlan:
        return next(s for stage in self.stages for s in stage if s.id == sub_id)


# -- what travels back ------------------------------------------------------------------------


@dataclass
class WrittenFile:
    """A file a task wrote for a topic: not part of the topic until a commit adds it."""

    topic: str
    """Logical topic name."""
    writer: int
    """Partition of the task that wrote it: orders several writers of one partition."""
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
    subtopology: int
    partition: int
    files: list[WrittenFile] = field(default_factory=list)
    """Outputs, including staged repartition files (merged by the next stage)."""
    merged: list[WrittenFile] = field(default_factory=list)
    """Repartition files this task merged from fresh staged files: the upstream publishes them."""
    processed: int = 0
    emitted: int = 0
    dropped_records: int = 0
    dead_letters: int = 0
    restored_entries: int = 0
    idle_checked: bool = False
    """The processing core ran (records or an idle advance, made or not) with idle close on:
    ``idle_advanced`` and ``next_close_ms`` are its report."""
    idle_advanced: bool = False
    next_close_ms: int | None = None
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase inside the task: read, merge, restore, build (the operators, unless kept
    from the batch before), process, write."""
    location: str | None = None
    """The Spark executor that ran it (``executor_<host>_<id>``), None in local mode."""
    standby: bool = False
    """A standby's catch-up (``restored_entries`` then counts what the warm copy applied)."""
    run: str | None = None
    """Which state the task's live operators hold after this run (a new id when it processed
    records); once the batch commits, the driver passes it back as ``TaskPlan.committed_run``.
    None: nothing to keep."""
    bad_input: list[dict] = field(default_factory=list)
    """Input set apart (:class:`deltastreams.streams._internal.runtime.bad_input.BadInputReport`, as
    dicts): dead-lettered, or, under ``on_bad_record = "fail"``, what stops the application."""

    def to_json(self) -> str:
        raw = asdict(self)
        raw["files"] = [f.to_json() for f in self.files]
        raw["merged"] = [f.to_json() for f in self.merged]
        return json.dumps(raw)

    @classmethod
    def from_json(cls, text: str) -> TaskOutcome:
        raw = json.loads(text)
        raw["files"] = [WrittenFile.from_json(f) for f in raw["files"]]
        raw["merged"] = [WrittenFile.from_json(f) for f in raw["merged"]]
        return cls(**raw)


def schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
