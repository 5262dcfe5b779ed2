"""StreamsConfig: the settings of one application, validated once, at the boundary."""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any

from deltastreams.conf._parse import boolean, enum_value, integer, invalid, milliseconds, ms_value, string_table, text, unknown_settings
from deltastreams.conf.errors import ConfigError
from deltastreams.conf.kafka import PREFIX as KAFKA_PREFIX
from deltastreams.conf.kafka import KafkaConfig
from deltastreams.conf.retention import PREFIX as RETENTION_PREFIX
from deltastreams.conf.retention import RetentionConfig
from deltastreams.conf.storage import PREFIX as STORAGE_PREFIX
from deltastreams.conf.storage import storage_options_from

_APPLICATION_ID = re.compile(r"^[A-Za-z0-9._-]+$")


class Guarantee(Enum):
    """Processing guarantee (Kafka's ``processing.guarantee``)."""

    AT_LEAST_ONCE = "at_least_once"
    EXACTLY_ONCE = "exactly_once"


class DeltaSpark(Enum):
    """Whether the application's Spark session loads delta-spark (``delta_spark``)."""

    AUTO = "auto"
    """When its jars are there (built by bin/setup, or given to spark-submit)."""
    ON = "on"
    """Always; the application fails to start without the jars."""
    OFF = "off"


class TopologyUpgrade(Enum):
    """What a start does when its topology would orphan committed state (``topology_upgrade``)."""

    REFUSE = "refuse"
    """Refuse to start, naming each store, repartition topic and sub-topology concerned."""
    ACCEPT_LOSS = "accept_loss"
    """Start anyway (logged as a warning): renamed stores start empty, the old repartition topics'
    unconsumed records and the old positions are ignored."""


class BadRecordPolicy(Enum):
    """What to do with a record that cannot be processed."""

    DLQ = "dlq"
    FAIL = "fail"


@dataclass(frozen=True, kw_only=True)
class StreamsConfig:
    """The settings of a deltastreams application (defaults: ``conf/defaults.toml``)."""

    application_id: str
    """Names the application: prefixes its internal topics, state and checkpoints."""
    root: str = "data"
    """Directory (or URI) holding topics (``<root>/topics/<name>``) and checkpoints."""
    state_dir: str | None = None
    """Local RocksDB state (and Spark checkpoints, logs); ``None`` means ``<root>/state`` for a
    local root and, for an object-store root, a directory under the machine's temporary directory
    named after the root: state must be on a local disk, progress lives in the transaction log."""
    processing_guarantee: Guarantee = Guarantee.EXACTLY_ONCE
    commit_interval: timedelta = timedelta(seconds=1)
    """Trigger interval of each sub-topology's query: one micro-batch is one commit."""
    caching: bool = True
    """Emit the last revision per window/key per commit (on) or one per record (off)."""
    num_partitions: int = 0
    """Partitions of repartition topics; 0 = the upstream sub-topology's source partitions."""
    on_bad_record: BadRecordPolicy = BadRecordPolicy.DLQ
    late_records_topic: str | None = None
    """If set, records dropped as too late for their window are also appended there."""
    max_records_per_batch: int = 1_000_000
    """Upper bound of records read per micro-batch and source topic."""
    single_task_records: int = 20_000
    """A trigger with at most this many input records runs as one Spark task (stage after stage
    in it): Spark's fixed cost per stage outweighs a small batch's work. In local mode the driver
    calls the task hosts itself for a trigger of any size (a Spark task would only relay its
    calls on the same machine). 0: always one Spark task per deltastreams task, in local mode too."""
    sticky_tasks: bool = True
    """On a cluster: each task runs on the executor holding its current stores whenever that one
    is free within ``spark.locality.wait``, anywhere otherwise (and at once when it is gone)."""
    num_standby_replicas: int = 0
    """On a cluster: how many other executors keep a warm copy of each task's stores (Kafka
    Streams' ``num.standby.replicas``), so a moved task restores only the last batch's tail."""
    idle_close: timedelta | None = None
    """Wall-clock completeness, beyond Kafka (off: None). A task whose input has brought no record
    for this long starts moving its stream time with the wall clock, so windows, sessions and
    suppressed results close without waiting for a new record (docs/differences-from-kafka.md)."""
    topology_upgrade: TopologyUpgrade = TopologyUpgrade.REFUSE
    """A start whose topology renames or drops a store, a repartition topic or a sub-topology's
    committed source positions (an unnamed operator added upstream shifts generated names) is
    refused, or, with ``accept_loss``, starts without that state (docs/operations.md)."""
    master: str = "local[2]"
    """The embedded default; a master given to spark-submit (or a running session's) wins."""
    delta_spark: DeltaSpark = DeltaSpark.AUTO
    """delta-spark in the session (Spark's own Delta reader and writer, for Spark users of the
    topics): never needed by the application itself."""
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    """What a running application removes, and when (``[retention]`` in ``defaults.toml``)."""
    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    """Which topics live in Kafka, and how to reach them (``[kafka]`` in ``defaults.toml``)."""
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    """How to reach an object-store root: delta-rs option names (``AWS_ENDPOINT_URL``, ...), from
    ``[storage_options]``, ``--set storage_options.<KEY>=...`` and the AWS environment variables
    (:mod:`deltastreams.conf.storage`). Not in the repr: it holds secrets."""
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    """Free-form Spark settings, the only escape hatch."""
    metrics_port: int = 0
    """Port the driver serves Prometheus metrics on (``/metrics``, text exposition format) while
    the application runs; 0: no endpoint (docs/metrics.md)."""
    metrics_address: str = "127.0.0.1"
    """Address the metrics endpoint binds to: loopback by default, ``0.0.0.0`` for a Prometheus
    server on another machine."""

    def __post_init__(self) -> None:
        if not isinstance(self.application_id, str) or not _APPLICATION_ID.match(self.application_id):
            raise invalid("application_id", "non-empty letters, digits, '.', '_' or '-'", self.application_id)
        if not isinstance(self.root, str | os.PathLike):
            raise invalid("root", "a directory or URI (a string)", self.root)
        if self.state_dir is not None and not isinstance(self.state_dir, str | os.PathLike):
            raise invalid("state_dir", "a directory (a string; empty: the default)", self.state_dir)
        for name in ("master", "metrics_address"):
            text(getattr(self, name), name)
        if self.late_records_topic is not None:
            text(self.late_records_topic, "late_records_topic", "a topic name (a string; empty: none)")
        if self.commit_interval <= timedelta(0):
            raise invalid("commit_interval_ms", "a positive number of milliseconds", ms_value(self.commit_interval))
        if self.num_partitions < 0:
            raise invalid("num_partitions", "an integer >= 0 (0: as many as the writing sub-topology's tasks)", self.num_partitions)
        if self.single_task_records < 0:
            raise invalid("single_task_records", "an integer >= 0 (0: always one Spark task per deltastreams task)", self.single_task_records)
        if self.num_standby_replicas < 0:
            raise invalid("num_standby_replicas", "an integer >= 0", self.num_standby_replicas)
        if self.idle_close is not None and self.idle_close <= timedelta(0):
            raise invalid("idle_close_ms", "positive, or -1 to turn idle close off", ms_value(self.idle_close))
        if not 0 <= self.metrics_port <= 65535:
            raise invalid("metrics_port", "a TCP port (1-65535), or 0 for no metrics endpoint", self.metrics_port)
        if not self.metrics_address:
            raise invalid("metrics_address", "an address to bind to, e.g. 127.0.0.1 or 0.0.0.0", self.metrics_address)
        if self.max_records_per_batch <= 0:
            raise invalid("max_records_per_batch", "a positive integer", self.max_records_per_batch)

    @property
    def commit_interval_ms(self) -> int:
        return int(self.commit_interval / timedelta(milliseconds=1))

    @property
    def idle_close_ms(self) -> int | None:
        return None if self.idle_close is None else int(self.idle_close / timedelta(milliseconds=1))

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee is Guarantee.EXACTLY_ONCE

    @property
    def local_state_dir(self) -> str:
        """The state directory on this machine (the driver's: see :attr:`state_under_tmp`)."""
        if self.state_dir:
            return self.state_dir
        if self.state_under_tmp is not None:
            return str(Path(tempfile.gettempdir()) / self.state_under_tmp)
        return str(Path(self.root) / "state")

    @property
    def state_under_tmp(self) -> str | None:
        """For an object-store root with no ``state_dir``: the state directory's path under the
        temporary directory of whichever machine runs a task (each resolves it itself, so every
        host of a cluster keeps its stores on its own disk, under its own ``TMPDIR``)."""
        if self.state_dir or "://" not in self.root or self.root.startswith("file://"):
            return None
        # Like Kafka Streams' default state.dir (java.io.tmpdir/kafka-streams), but one per root,
        # so two applications of one id on two roots never share a store.
        scheme, _, rest = self.root.partition("://")
        return str(Path("deltastreams") / scheme / rest.strip("/") / "state")

    @property
    def dlq_topic(self) -> str:
        return f"{self.application_id}-dlq"

    @classmethod
    def load(
        cls, settings: Mapping[str, Any] | None = None, *, file: str | Path | None = None
    ) -> StreamsConfig:
        """Defaults from ``conf/defaults.toml``, then ``file`` (TOML), then ``settings``.

        Keys use the boundary names (``commit_interval_ms``, ``processing_guarantee``, ...).
        Retention settings are a ``[retention]`` table in files, and either a nested mapping
        (``{"retention": {"purge_interval_ms": 100}}``) or dotted keys
        (``retention.purge_interval_ms``, as ``--set`` gives them) in ``settings``; each layer
        overrides single keys of the table, not the whole table.
        """
        merged: dict[str, Any] = _flat(tomllib.loads(resources.files("deltastreams.conf").joinpath("defaults.toml").read_text()))
        if file is not None:
            try:
                merged.update(_flat(tomllib.loads(Path(file).read_text())))
            except FileNotFoundError:
                raise ConfigError(f"configuration file {file} does not exist", setting="file") from None
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"configuration file {file} is not valid TOML: {e}", setting="file") from None
        merged.update(_flat(settings or {}))
        return cls._from_boundary(merged)

    @classmethod
    def _from_boundary(cls, raw: Mapping[str, Any]) -> StreamsConfig:
        tables = (RETENTION_PREFIX, KAFKA_PREFIX, STORAGE_PREFIX)
        known = {f.name for f in fields(cls)} - {"retention", "kafka", "idle_close", "storage_options"} | {"commit_interval_ms", "idle_close_ms"}
        unknown = sorted(k for k in set(raw) - known if not k.startswith(tables))
        if unknown:
            tables_named = ["kafka", "retention", "storage_options"]  # tables: [retention], or retention.<key>
            raise unknown_settings(unknown, sorted(known - {"commit_interval", "idle_close"}) + tables_named)
        values = {k: v for k, v in raw.items() if not k.startswith(tables)}
        values["retention"] = RetentionConfig.from_boundary(
            {k[len(RETENTION_PREFIX) :]: v for k, v in raw.items() if k.startswith(RETENTION_PREFIX)}
        )
        values["kafka"] = KafkaConfig.from_boundary({k[len(KAFKA_PREFIX) :]: v for k, v in raw.items() if k.startswith(KAFKA_PREFIX)})
        values["storage_options"] = storage_options_from(
            {k[len(STORAGE_PREFIX) :]: v for k, v in raw.items() if k.startswith(STORAGE_PREFIX)}, os.environ
        )
        if "application_id" not in values:
            raise ConfigError("application_id is required", setting="application_id")
        if "commit_interval_ms" in values:
            ms = milliseconds(values.pop("commit_interval_ms"), "commit_interval_ms", "a positive number of milliseconds")
            values["commit_interval"] = timedelta(milliseconds=ms)
        if "idle_close_ms" in values:
            values["idle_close"] = _optional_ms(values.pop("idle_close_ms"), "idle_close_ms")
        for name, kind in _CHOICES.items():
            if name in values:
                values[name] = enum_value(kind, values[name], name)
        for name, allowed in _INTEGERS.items():
            if name in values:
                values[name] = integer(values[name], name, allowed)
        for name in ("caching", "sticky_tasks"):
            if name in values:
                values[name] = boolean(values[name], name)
        if "spark_conf" in values:
            values["spark_conf"] = string_table(values["spark_conf"], "spark_conf", "a table of Spark settings (spark.key = \"value\")")
        values["late_records_topic"] = values.get("late_records_topic") or None
        values["state_dir"] = values.get("state_dir") or None
        return cls(**values)


_CHOICES: dict[str, type[Enum]] = {
    "processing_guarantee": Guarantee,
    "delta_spark": DeltaSpark,
    "topology_upgrade": TopologyUpgrade,
    "on_bad_record": BadRecordPolicy,
}
"""Settings that take one of an enum's values (the error lists them)."""
_INTEGERS = {
    "num_partitions": "an integer >= 0 (0: as many as the writing sub-topology's tasks)",
    "max_records_per_batch": "a positive integer",
    "single_task_records": "an integer >= 0 (0: always one Spark task per deltastreams task)",
    "num_standby_replicas": "an integer >= 0",
    "metrics_port": "a TCP port (1-65535), or 0 for no metrics endpoint",
}
"""Integer settings, with what each allows."""


def _optional_ms(value: Any, setting: str) -> timedelta | None:
    """A duration in whole milliseconds at the boundary, -1 (or none given) meaning off."""
    if value is None or value == "":
        return None
    allowed = "positive, or -1 to turn it off (whole milliseconds)"
    number = integer(value, setting, allowed)
    if number == -1:
        return None
    if number <= 0:
        raise invalid(setting, allowed, value)
    return timedelta(milliseconds=number)


def _flat(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``{"retention": {"x": 1}}`` -> ``{"retention.x": 1}`` (and ``kafka``, ``storage_options``
    likewise); other keys unchanged."""
    flat = {k: v for k, v in settings.items() if k not in ("retention", "kafka", "storage_options")}
    for name, kind in (("retention", RetentionConfig), ("kafka", KafkaConfig)):
        table = settings.get(name, {})
        if isinstance(table, kind):
            raise ConfigError(f"pass {name} settings as a mapping of boundary keys, or use dataclasses.replace(config, {name}=...)", setting=name)
        if not isinstance(table, Mapping):
            raise ConfigError(f"{name} must be a table of settings, got {table!r}", setting=name)
        flat.update({f"{name}.{k}": v for k, v in table.items()})
    options = settings.get("storage_options", {})
    if not isinstance(options, Mapping):
        raise ConfigError(f"storage_options must be a table of settings, got {options!r}", setting="storage_options")
    flat.update({f"{STORAGE_PREFIX}{k}": v for k, v in options.items()})
    return flat
