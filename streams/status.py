"""What an application is doing, read from its root without touching it (Kafka's
``kafka-consumer-groups --describe`` plus ``kafka-streams-application-reset --dry-run``, for a
deltastreams application): ``python -m deltastreams.jobs.status --root R --application-id A``.

    status = application_status(topology, config)   # a plain, JSON-able structure
    print(format_status(status))                    # or json.dumps(status.to_dict())

Per sub-topology: its last committed batch and when, its positions against the ends of the topics
it reads (lag in versions and records; Kafka offsets for Kafka-sourced topics), the instance and
epoch holding its transaction log (the last registration) and whether that instance is alive (its
heartbeat, :mod:`deltastreams.streams._internal.runtime.heartbeat`), its stores; for the application, the last
retention commits in its topics' Delta histories and any unfinished reset or rescale.

Read-only by construction: tables are opened and commit files read, never a transaction log
object (which creates a missing log) nor anything else that writes. It works while the
application commits (each table is read at whatever version is current; a commit file removed by
log cleanup between listing and reading ends that scan, reported as unknown) and on object-store
roots (the process's storage options: :func:`deltastreams.sinks.use_storage_options`).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from deltalake.exceptions import DeltaError

from deltastreams.conf import StreamsConfig
from pyarrow.fs import FileSelector, FileType

from deltastreams.sinks import Topic, filesystem_for, files_added, open_table, read_commit, read_version, table_exists, topic_uri, under_root
from deltastreams.sinks.transaction import COMMIT_APP, EPOCH_APP, decided_entry
from deltastreams.streams._internal.runtime import heartbeat
from deltastreams.streams._internal.runtime import rescale_marker, reset_marker, skips
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import SourceNode

_REGISTRATION_SCAN = 50
"""How many commits back a transaction log is searched for the holder's registration when no
heartbeat names it (every batch is a commit: a long run's registration is far behind)."""
_RECORDS_SCAN = 2000
"""Lags of more versions than this are not counted in records (one commit file read per version)."""
_HISTORY = 100
"""Commits of each topic's history searched for retention's last runs."""
_RETENTION_OPERATIONS = {"OPTIMIZE": "optimize", "REORG": "compact", "DELETE": "purge or expire", "SET TBLPROPERTIES": "compact (clean watermarks)"}

log = logging.getLogger("deltastreams")


@dataclass(frozen=True)
class BatchStatus:
    seq: int
    epoch: int
    guarantee: str
    log_version: int
    committed_ms: int | None


@dataclass(frozen=True)
class HolderStatus:
    """The instance holding a sub-topology: the last one registered in its transaction log."""

    epoch: int
    instance: str | None
    """None: no heartbeat names it and its registration is older than the commits searched."""
    alive: bool
    host: str | None = None
    pid: int | None = None
    heartbeat_age_s: float | None = None
    stopped_ms: int | None = None
    """When it stopped gracefully (None: running, killed, or never heard of)."""


@dataclass(frozen=True)
class InputStatus:
    topic: str
    physical: str
    kind: str
    """``input`` (a Delta topic from outside), ``kafka``, ``repartition`` or ``global``."""
    position: int | dict[int, int]
    """Delta: the last version consumed (-1: none); Kafka: the next offset per partition."""
    end: int | dict[int, int] | None
    """Delta: the topic's latest version; Kafka: the end offset per partition; None: unknown
    (the topic does not exist yet, or Kafka did not answer: see ``error``)."""
    lag_versions: int | None = None
    lag_records: int | None = None
    error: str | None = None
    bad_input: tuple[str, ...] = ()
    """Files in the lag that break the contract for external writers (``<topic> version <v>, file
    <path>: <reason>``), those skipped aside: the application dead-letters them when it gets there,
    or stops (``on_bad_record = "fail"``)."""


@dataclass(frozen=True)
class StoreStatus:
    name: str
    changelog: str
    exists: bool
    tasks: int | None
    """Partitions of its changelog: one per task (None until the changelog exists)."""


@dataclass(frozen=True)
class SubtopologyStatus:
    id: int
    transaction_log: str
    state: str
    """``running`` (its holder is alive), ``stopped`` or ``never ran`` (no transaction log)."""
    tasks: int | None = None
    last_batch: BatchStatus | None = None
    last_commit_ms: int | None = None
    """The transaction log's newest commit of any kind (a batch, or a registration)."""
    holder: HolderStatus | None = None
    inputs: tuple[InputStatus, ...] = ()
    stores: tuple[StoreStatus, ...] = ()
    error: str | None = None
    skipped: tuple[dict, ...] = ()
    """The input its transaction log says to skip (:mod:`deltastreams.streams.skip`): topic, version, file
    (None: every file of the version), when it was recorded and why."""


@dataclass(frozen=True)
class RetentionRun:
    topic: str
    step: str
    operation: str
    version: int | None
    timestamp_ms: int | None


@dataclass(frozen=True)
class ApplicationStatus:
    application_id: str
    root: str
    checked_ms: int
    state: str
    """``running`` (some holder alive), ``stopped``, ``never ran``, or ``resetting`` / ``rescaling``
    (an unfinished reset or rescale: the application refuses to start until it is run again)."""
    subtopologies: tuple[SubtopologyStatus, ...] = ()
    outputs: tuple[str, ...] = ()
    retention: tuple[RetentionRun, ...] = ()
    """The newest retention commit of each kind in each table the application writes (within the
    last commits of its history)."""
    reset_in_progress: dict | None = None
    rescale_in_progress: dict | None = None

    def to_dict(self) -> dict:
        return json.loads(json.dumps(asdict(self), default=str))


# -- reading ----------------------------------------------------------------------------------------


def transaction_log_uri(root: str, application_id: str, subtopology: int) -> str:
    return under_root(root, "transactions", application_id, f"subtopology-{subtopology}")


def application_status(topology: Topology, config: StreamsConfig, *, now_ms: int | None = None) -> ApplicationStatus:
    """The status of ``config.application_id`` under ``config.root`` (see the module docstring)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    root, app = config.root, config.application_id
    beats = heartbeat.read_heartbeats(root, app)
    subs = tuple(_retrying(lambda sub=sub: _subtopology_status(topology, config, sub, beats, now_ms)) for sub in topology.subtopologies)
    reset_plan = reset_marker.read_plan(root, app)
    rescale_plan = rescale_marker.read_plan(root, app) if "://" not in root else None
    if reset_plan is not None:
        state = "resetting"
    elif rescale_plan is not None:
        state = "rescaling"
    elif any(s.state == "running" for s in subs):
        state = "running"
    elif all(s.state == "never ran" for s in subs):
        state = "never ran"
    else:
        state = "stopped"
    outputs = tuple(t for t in topology.sink_topics if t not in topology.internal_topics)
    return ApplicationStatus(
        application_id=app,
        root=root,
        checked_ms=now_ms,
        state=state,
        subtopologies=subs,
        outputs=outputs,
        retention=tuple(_retrying(lambda: _retention_runs(topology, config))),
        reset_in_progress=reset_plan and {k: reset_plan[k] for k in ("id", "target", "started_ms") if k in reset_plan},
        rescale_in_progress=rescale_plan and {k: rescale_plan[k] for k in ("phase", "partitions") if k in rescale_plan},
    )


def _retrying(read, attempts: int = 3):
    """A read racing the running application's log cleanup (a commit file listed, then deleted)
    fails; read again, from the newer state."""
    for attempt in range(attempts):
        try:
            return read()
        except (OSError, DeltaError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2)
    return None


def holders(topology: Topology, config: StreamsConfig, *, now_ms: int | None = None) -> dict[int, HolderStatus | None]:
    """Per sub-topology, the instance holding it (None: never ran): what a reset checks."""
    return holders_of(config, [sub.id for sub in topology.subtopologies], now_ms=now_ms)


def holders_of(config: StreamsConfig, subtopologies, *, now_ms: int | None = None) -> dict[int, HolderStatus | None]:
    """:func:`holders` by sub-topology id (the transaction logs on the root, when the topology is not at hand)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    beats = heartbeat.read_heartbeats(config.root, config.application_id)
    found = {}
    for sub_id in subtopologies:
        uri = transaction_log_uri(config.root, config.application_id, sub_id)
        found[sub_id] = _holder(uri, sub_id, open_table(uri), beats, now_ms) if table_exists(uri) else None
    return found


def logged_subtopologies(config: StreamsConfig) -> list[int]:
    """The sub-topologies of the application that have a transaction log under the root."""
    fs, base = filesystem_for(under_root(config.root, "transactions", config.application_id))
    entries = fs.get_file_info(FileSelector(base, allow_not_found=True))
    ids = [e.base_name.removeprefix("subtopology-") for e in entries if e.type == FileType.Directory and e.base_name.startswith("subtopology-")]
    return sorted(int(i) for i in ids if i.isdigit())


def still_running(config: StreamsConfig, subtopologies, doing: str) -> str | None:
    """Why ``doing`` (a reset, a rescale, a skip) must not go ahead now: some sub-topology is held
    by a live instance (its heartbeat is fresh and it did not mark itself stopped: the one way
    ``status``, ``reset``, ``rescale`` and ``skip`` judge liveness). None: every holder is stopped
    or dead."""
    alive = {sub: h for sub, h in holders_of(config, subtopologies).items() if h is not None and h.alive}
    if not alive:
        return None
    sub, h = next(iter(alive.items()))
    who = f"instance {h.instance} (epoch {h.epoch}) on {h.host}, pid {h.pid}, heartbeat {h.heartbeat_age_s:.1f} s ago"
    return (
        f"application {config.application_id} is running: sub-topology {sub} is held by {who}. Stop every instance first (SIGTERM "
        f"to the driver), then {doing}. If that instance is known dead (its machine is gone) and you cannot wait for its heartbeat "
        f"to expire ({heartbeat.EXPIRY_S:g} s), run again with --force: it fences it, so it can no longer commit"
    )


def refuse_while_running(config: StreamsConfig, subtopologies, doing: str, error: type[Exception], force: bool) -> None:
    """Raise ``error`` with :func:`still_running`'s reason while a live instance holds one of
    ``subtopologies``; with ``force``, only warn: ``doing`` fences that instance, so it cannot
    commit after it."""
    running = still_running(config, subtopologies, doing)
    if running is None:
        return
    if not force:
        raise error(running)
    log.warning("%s goes ahead although %s (--force): it fences that instance", doing, running.split(". Stop")[0])


def _subtopology_status(topology: Topology, config: StreamsConfig, sub, beats: dict, now_ms: int) -> SubtopologyStatus:
    uri = transaction_log_uri(config.root, config.application_id, sub.id)
    stores = tuple(_store_status(topology, config, store) for store in sub.stores)
    tasks = _tasks(topology, config, sub)
    if not table_exists(uri):
        inputs = tuple(_input_status(topology, config, sub, topic, -1) for topic in sub.source_topics)
        return SubtopologyStatus(sub.id, uri, "never ran", tasks=tasks, inputs=inputs, stores=stores)
    table = open_table(uri)
    head = table.version()
    holder = _holder(uri, sub.id, table, beats, now_ms)
    last, where, error = _last_batch(uri, head) if table.transaction_version(COMMIT_APP) is not None else (None, None, None)
    positions = {t: end for t, (_, end) in last.sources.items()} if last is not None else {}
    skipped = skips.parse(table.metadata().configuration.get(skips.PROPERTY))
    inputs = tuple(_input_status(topology, config, sub, topic, positions.get(topic, -1), skips.Skips(skipped)) for topic in sub.source_topics)
    batch = None
    if last is not None:
        batch = BatchStatus(last.seq, last.epoch, "exactly_once" if last.exactly_once else "at_least_once", *where)
    return SubtopologyStatus(
        id=sub.id,
        transaction_log=uri,
        state="running" if holder.alive else "stopped",
        tasks=tasks,
        last_batch=batch,
        last_commit_ms=_commit_time(read_commit(uri, head) or []),
        holder=holder,
        inputs=inputs,
        stores=stores,
        error=error,
        skipped=tuple(asdict(x) for x in skipped if x.topic in sub.source_topics),
    )


def _commit_info(actions: list[dict]) -> dict:
    return next((a["commitInfo"] for a in actions if "commitInfo" in a), {})


def _commit_time(actions: list[dict]) -> int | None:
    stamp = _commit_info(actions).get("timestamp")
    return int(stamp) if stamp is not None else None


def _last_batch(uri: str, head: int):
    """The newest decided batch, with (log version, commit time); and why it is unknown, if it is."""
    for version in range(head, 0, -1):
        actions = read_commit(uri, version)
        if actions is None:
            return None, None, f"commit files before version {version + 1} are gone (log cleanup): the last batch is older"
        batch = decided_entry(actions)
        if batch is not None:
            return batch, (version, _commit_time(actions)), None
    return None, None, None


def _holder(uri: str, sub_id: int, table, beats: dict, now_ms: int) -> HolderStatus:
    epoch = table.transaction_version(EPOCH_APP)
    epoch = -1 if epoch is None else epoch
    beat = next((b for b in beats.values() if b.get("epochs", {}).get(str(sub_id)) == epoch), None)
    if beat is None:
        # An instance that registers nothing (at_least_once), or one starting, before it registers.
        beat = next((b for b in beats.values() if heartbeat.is_alive(b, now_ms) and str(sub_id) not in b.get("epochs", {})), None)
    if beat is not None:
        return HolderStatus(
            epoch, beat["instance"], heartbeat.is_alive(beat, now_ms), beat.get("host"), beat.get("pid"),
            round(heartbeat.age_s(beat, now_ms), 1), beat.get("stopped_ms"),
        )  # fmt: skip
    return HolderStatus(epoch, _registered_instance(uri, table.version(), epoch), False)


def _registered_instance(uri: str, head: int, epoch: int) -> str | None:
    for version in range(head, max(0, head - _REGISTRATION_SCAN), -1):
        actions = read_commit(uri, version)
        if actions is None:
            return None
        entry = json.loads(_commit_info(actions).get("deltastreams", "{}"))
        if entry.get("kind") == "epoch" and entry.get("epoch") == epoch:
            return entry.get("instance")
    return None


def _input_status(topology: Topology, config: StreamsConfig, sub, topic: str, position, skipped: skips.Skips | None = None) -> InputStatus:
    physical = topology.physical_topic(config.application_id, topic)
    if topic in config.kafka.source_topics:
        return _kafka_input(topology, config, topic, position)
    kind = "repartition" if topic in topology.internal_topics else "global" if topic in sub.global_topics else "input"
    if not Topic.exists(config.root, physical):
        return InputStatus(topic, physical, kind, position, None)
    uri = topic_uri(config.root, physical)
    end = open_table(uri).version()
    lag = max(0, end - position)
    records = None
    bad: list[str] = []
    if 0 < lag <= _RECORDS_SCAN:
        try:
            if kind == "input":
                records, bad = _lag_of_input(uri, topic, position, end, skipped or skips.Skips())
            else:
                records = sum(max(f.num_records, 0) for f in files_added(uri, position, end))
        except Exception as e:  # noqa: BLE001 - e.g. versions gone to log cleanup: the lag in versions stands
            return InputStatus(topic, physical, kind, position, end, lag, None, f"records not counted: {e}")
    elif lag == 0:
        records = 0
    return InputStatus(topic, physical, kind, position, end, lag, records, bad_input=tuple(bad))


def _lag_of_input(uri: str, topic: str, position: int, end: int, skipped: skips.Skips) -> tuple[int, list[str]]:
    """Records an input topic holds after ``position``, and its files there that break the
    contract for external writers (what the application reads, as it judges it)."""
    reads = [read_version(uri, version) for version in range(position + 1, end + 1)]
    removed = {path for read in reads for path in read.removed}  # withdrawn before the application got there
    records, bad = 0, []
    for read in reads:
        records += sum(max(f.num_records, 0) for f in read.files if f.path not in removed and not skipped.covering(topic, read.version, f.path))
        bad += [f"{topic} version {read.version}, file {r.path}: {r.reason}" for r in read.rejected if r.path not in removed and not skipped.covering(topic, read.version, r.path)]
    return records, bad


def _kafka_input(topology: Topology, config: StreamsConfig, topic: str, position) -> InputStatus:
    from deltastreams.sinks.kafka import KafkaTopic, partition_count, watermarks

    try:
        node_types = next((n.key_type, n.value_type) for n in topology.nodes.values() if isinstance(n, SourceNode) and topic in n.topics)
        kafka = config.kafka
        handle = KafkaTopic(kafka.bootstrap_servers, topic, kafka.key_format, kafka.value_format, *node_types, dict(kafka.client))
        ends = {p: high for p, (_, high) in watermarks(handle, range(partition_count(handle))).items()}
    except Exception as e:  # noqa: BLE001 - Kafka unreachable: say so, the rest of the status stands
        return InputStatus(topic, topic, "kafka", position, None, error=f"Kafka did not answer: {e}")
    committed = position if isinstance(position, dict) else {}
    lag = sum(max(0, high - committed.get(p, 0)) for p, high in ends.items()) if committed else None
    return InputStatus(topic, topic, "kafka", position, ends, None, lag)


def _partitions(config: StreamsConfig, physical: str) -> int | None:
    return Topic.open(config.root, physical).partitions if Topic.exists(config.root, physical) else None


def _store_status(topology: Topology, config: StreamsConfig, store: str) -> StoreStatus:
    changelog = topology.stores[store].changelog_topic(config.application_id)
    tasks = _partitions(config, changelog)
    return StoreStatus(store, changelog, tasks is not None, tasks)


def _tasks(topology: Topology, config: StreamsConfig, sub) -> int | None:
    counts = [
        _partitions(config, topology.physical_topic(config.application_id, t)) for t in sub.partitioned_topics if t not in config.kafka.source_topics
    ]
    counts = [c for c in counts if c is not None]
    return max(counts) if counts else None


def _retention_runs(topology: Topology, config: StreamsConfig) -> list[RetentionRun]:
    app = config.application_id
    written = [topology.physical_topic(app, t) for sub in topology.subtopologies for t in sub.sink_topics]
    written += [topology.stores[s].changelog_topic(app) for sub in topology.subtopologies for s in sub.stores]
    written.append(config.dlq_topic)
    runs = []
    for physical in dict.fromkeys(written):
        if not Topic.exists(config.root, physical):
            continue
        seen: set[str] = set()
        for commit in open_table(topic_uri(config.root, physical)).history(_HISTORY):
            operation = commit.get("operation")
            if operation not in _RETENTION_OPERATIONS or operation in seen:
                continue
            seen.add(operation)
            step = _RETENTION_OPERATIONS[operation]
            if operation == "DELETE":
                step = "purge" if physical.endswith("-repartition") else "expire"
            runs.append(RetentionRun(physical, step, operation, commit.get("version"), commit.get("timestamp")))
    return runs


# -- printing ---------------------------------------------------------------------------------------


def _time(ms: int | None, now_ms: int) -> str:
    if ms is None:
        return "unknown time"
    stamp = datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return f"{stamp} ({max(0.0, (now_ms - ms) / 1000):.1f} s ago)"


def _position(value) -> str:
    if isinstance(value, dict):
        return "offsets " + ", ".join(f"{p}:{o}" for p, o in sorted(value.items())) if value else "offsets (none)"
    return "none" if value is None or value < 0 else f"version {value}"


def format_status(status: ApplicationStatus) -> str:
    now = status.checked_ms
    lines = [f"application {status.application_id} under {status.root}: {status.state.upper()} (checked {_time(now, now).split(' ')[0]})"]
    if status.reset_in_progress:
        lines.append(f"  unfinished reset to {status.reset_in_progress.get('target')}: run the reset again to finish it; the application refuses to start until then")
    if status.rescale_in_progress:
        lines.append(f"  unfinished rescale to {status.rescale_in_progress.get('partitions')} partitions: run deltastreams.jobs.rescale again to finish it")
    for sub in status.subtopologies:
        lines.append(f"sub-topology {sub.id}: {sub.state}" + (f", {sub.tasks} tasks" if sub.tasks is not None else ""))
        if sub.last_batch is not None:
            b = sub.last_batch
            lines.append(f"  last batch: {b.seq} ({b.guarantee}, epoch {b.epoch}, transaction log version {b.log_version}), committed {_time(b.committed_ms, now)}")
        elif sub.state != "never ran":
            lines.append("  last batch: none committed yet")
        if sub.error:
            lines.append(f"  note: {sub.error}")
        if sub.holder is not None:
            h = sub.holder
            who = h.instance or "(registered before the last commits searched)"
            where = f" on {h.host} (pid {h.pid})" if h.host else ""
            if h.alive:
                verdict = f"alive (heartbeat {h.heartbeat_age_s:.1f} s ago)"
            elif h.stopped_ms is not None:
                verdict = f"not alive: stopped at {_time(h.stopped_ms, now)}"
            elif h.heartbeat_age_s is not None:
                verdict = f"not alive: no heartbeat for {h.heartbeat_age_s:.1f} s (killed, or its host lost)"
            else:
                verdict = "not alive: no heartbeat"
            lines.append(f"  held by: instance {who}, epoch {h.epoch}{where}: {verdict}; last transaction-log commit {_time(sub.last_commit_ms, now)}")
        for i in sub.inputs:
            if i.end is None:
                lines.append(f"  input {i.physical} ({i.kind}): position {_position(i.position)}, " + (i.error or "topic not created yet"))
                continue
            lag = f"lag {i.lag_versions} versions" if i.lag_versions is not None else "lag"
            lag += f", {i.lag_records:,} records" if i.lag_records is not None else ""
            lines.append(f"  input {i.physical} ({i.kind}): position {_position(i.position)}, end {_position(i.end)}: {lag}" + (f" ({i.error})" if i.error else ""))
            for bad in i.bad_input:
                lines.append(f"    bad input ahead: {bad} (dead-lettered when the job reaches it; with on_bad_record = fail it stops there)")
        for x in sub.skipped:
            what = f"file {x['file']}" if x["file"] is not None else "every file"
            lines.append(f"  skipped: {x['topic']} version {x['version']}, {what}, recorded {_time(x['recorded_ms'], now)}: {x['reason']}")
        for s in sub.stores:
            where = f"{s.tasks} tasks" if s.exists else "changelog not created yet"
            lines.append(f"  store {s.name}: changelog {s.changelog}, {where}")
    lines.append("outputs: " + (", ".join(status.outputs) or "none"))
    if status.retention:
        lines.append(f"retention, last runs (in the last {_HISTORY} commits of each topic):")
        for r in status.retention:
            lines.append(f"  {r.topic}: {r.step} ({r.operation}) version {r.version}, {_time(r.timestamp_ms, now)}")
    else:
        lines.append(f"retention: no run in the last {_HISTORY} commits of the application's topics")
    return "\n".join(lines)


__all__ = [
    "ApplicationStatus",
    "BatchStatus",
    "HolderStatus",
    "InputStatus",
    "RetentionRun",
    "StoreStatus",
    "SubtopologyStatus",
    "application_status",
    "format_status",
    "holders",
    "holders_of",
    "logged_subtopologies",
    "refuse_while_running",
    "still_running",
    "transaction_log_uri",
]
