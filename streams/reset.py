"""Resetting an application to reprocess its input (Kafka's ``kafka-streams-application-reset``):
``python -m deltastreams.jobs.reset --root R --application-id A (--to-earliest | --to-latest |
--to-timestamp T | --to-version TOPIC=V ...)``.

What a reset does, for a stopped application:
- every input topic's committed position moves: to the start (``earliest``), to the topic's
  latest version (``latest``: skip everything there now), to the last version committed before a
  time (``timestamp``: the versions committed at or after it are read again, as Kafka reads again
  the records whose timestamp is at or after it), or to a version given per topic (``version``:
  Delta time travel, the versions after it are read again). Positions are whole Delta versions;
  a Kafka-sourced topic moves to its earliest or latest offsets;
- the application's internal topics (repartition topics) and changelogs are deleted, and so is
  its local state on this machine (``<state_dir>/<application_id>``, its logs kept): the next
  run starts with empty stores, rebuilds nothing, and re-reads global tables from the start.
  Stores on other machines rebuild themselves: a recreated changelog has a new table id;
- output topics are kept, as Kafka's tool keeps them: the reprocessed results are appended
  after the old ones. Delete or truncate them yourself if that is not what you want.

How positions move: by the transaction logs' own commit protocol. Per sub-topology, the reset
registers a new epoch (fencing any instance still alive, whose next commit then fails) and
decides a batch that publishes nothing and records the new positions, with the next ``seq``, so
outputs' ``txn`` versions keep increasing and the next run resumes from there as from any batch.

Crash safety (kill -9 at any point): a plan file, ``<root>/reset/<application_id>/plan.json``,
written whole once the logs are fenced and the new positions known, is the point of no return.
1. Checks (nothing held by a live instance, unless ``force``); resolve the target positions.
2. Fence: register a new epoch in every transaction log and roll its last decided batch forward
   onto the outputs (a batch half published by a killed instance is completed, not lost).
   A crash up to here changed nothing visible: a rerun starts over.
3. Write the plan: the decisions (seq, positions) and what to delete. The application refuses to
   start while it exists (:func:`deltastreams.streams._internal.runtime.reset_marker.require_no_reset`).
4. Decide each sub-topology's batch (skipped when its log already holds that seq).
5. Delete the internal topics and changelogs (whole directories; a missing one is done).
6. Stop this machine's task hosts of the application and delete its local state.
7. Remove the plan.
A rerun after a crash in 4-7 reads the plan and finishes those steps with the same decisions
(whatever target the rerun asks for: it is told it completed the earlier reset).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.sinks import Topic, filesystem_for, open_table, read_commit, table_exists, topic_uri
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog
from deltastreams.streams._internal.runtime import rescale_marker, reset_marker, task_host
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams.status import refuse_while_running, transaction_log_uri
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import SourceNode

log = logging.getLogger("deltastreams")


class ResetError(DeltaStreamsError):
    """The reset was refused; nothing changed. The message says why and what to do."""


@dataclass(frozen=True)
class ResetTarget:
    """Where the input topics' positions go: exactly one of the four."""

    earliest: bool = False
    latest: bool = False
    timestamp_ms: int | None = None
    versions: dict[str, int] | None = None

    def __post_init__(self) -> None:
        given = [self.earliest, self.latest, self.timestamp_ms is not None, self.versions is not None]
        if sum(given) != 1:
            raise ResetError("a reset needs exactly one target: --to-earliest, --to-latest, --to-timestamp or --to-version")

    def describe(self) -> str:
        if self.earliest:
            return "earliest"
        if self.latest:
            return "latest"
        if self.timestamp_ms is not None:
            return f"timestamp {self.timestamp_ms} ({datetime.fromtimestamp(self.timestamp_ms / 1000).astimezone().isoformat(timespec='milliseconds')})"
        return "versions " + ", ".join(f"{t}={v}" for t, v in sorted(self.versions.items()))


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (without a zone: local time)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        raise ResetError(f"--to-timestamp takes epoch milliseconds or an ISO 8601 time like 2026-11-26T10:00:00Z, got {text!r}") from None


@dataclass
class ResetReport:
    application_id: str
    target: str
    positions: dict[str, object] = field(default_factory=dict)
    """Per input topic: its position after the reset (a Delta version, -1 for none; Kafka offsets)."""
    previous: dict[str, object] = field(default_factory=dict)
    """Per input topic: where the application had got to (the least over its readers)."""
    decided: dict[int, int] = field(default_factory=dict)
    """Per sub-topology: the seq of the batch recording the new positions."""
    deleted_topics: list[str] = field(default_factory=list)
    deleted_state: str | None = None
    kept_outputs: list[str] = field(default_factory=list)
    resumed: bool = False
    """An interrupted reset was finished (its target, not necessarily the one asked for)."""
    seconds: float = 0.0


def reset(topology: Topology, config: StreamsConfig, target: ResetTarget, *, force: bool = False) -> ResetReport:
    """Reset ``config.application_id`` under ``config.root`` (see the module docstring). ``force``:
    go ahead although a holder looks alive (its heartbeat is fresh) because it is known dead."""
    started = time.perf_counter()
    root, app = config.root, config.application_id
    logs = {sub.id: transaction_log_uri(root, app, sub.id) for sub in topology.subtopologies}
    plan = reset_marker.read_plan(root, app)
    resumed = plan is not None
    if plan is None:
        # Step 1
        if not any(table_exists(uri) for uri in logs.values()):
            raise ResetError(f"application {app!r} has never run under {root} (no transaction log at {logs[min(logs)]}): nothing to reset")
        if "://" not in root and rescale_marker.read_plan(root, app) is not None:
            raise ResetError(f"application {app} has an unfinished rescale: run deltastreams.jobs.rescale again to finish it, then reset")
        refuse_while_running(config, [sub.id for sub in topology.subtopologies], "reset", ResetError, force)
        positions = _target_positions(topology, config, target)
    # Step 2
    instance = f"reset-{uuid.uuid4().hex[:8]}"
    deleted = _deleted_topics(topology, config)
    txlogs = {}
    previous: dict[str, list] = {}
    for sub in topology.subtopologies:
        if not table_exists(logs[sub.id]):
            continue  # never ran: nothing to fence, it starts from the new positions anyway
        txlog = txlogs[sub.id] = TransactionLog(logs[sub.id], f"{app}/subtopology-{sub.id}")
        txlog.register(instance)
        last = txlog.last_decided()
        if last is not None and last.exactly_once:
            kept = {t: p for t, p in last.tables.items() if p.uri not in {topic_uri(root, d) for d in deleted}}
            txlog.publish(DecidedBatch(last.seq, last.epoch, last.sources, kept), lambda topic, uri: open_table(uri))
        for topic, (_, end) in (last.sources.items() if last is not None else ()):
            previous.setdefault(topic, []).append(end)
    crash_point("reset_after_fence")
    if plan is None:
        # Step 3: the point of no return
        decisions = []
        for sub in topology.subtopologies:
            if sub.id not in txlogs:
                continue
            last = txlogs[sub.id].last_decided()
            sources = {t: positions[t] for t in sub.source_topics if t in positions}
            decisions.append({"subtopology": sub.id, "seq": last.seq + 1 if last is not None else 0, "sources": sources})
        plan = {
            "id": instance,
            "target": target.describe(),
            "started_ms": int(time.time() * 1000),
            "decisions": decisions,
            "delete": deleted,
            "tasks": {str(sub.id): _task_count(topology, config, sub) for sub in topology.subtopologies},
            "previous": {t: _least(ends) for t, ends in previous.items() if t not in topology.internal_topics},
        }
        reset_marker.write_plan(root, app, plan)
    crash_point("reset_after_plan")
    report = ResetReport(app, plan["target"], resumed=resumed)
    report.previous = {t: _restore(p) for t, p in plan.get("previous", {}).items()}
    # Step 4
    for count, decision in enumerate(plan["decisions"]):
        txlog = txlogs[decision["subtopology"]]
        last = txlog.last_decided()
        sources = {t: (_restore(p), _restore(p)) for t, p in decision["sources"].items()}
        report.positions.update({t: _restore(p) for t, p in decision["sources"].items()})
        report.decided[decision["subtopology"]] = decision["seq"]
        if last is not None and last.seq >= decision["seq"]:
            continue  # decided by the interrupted run
        txlog.decide(DecidedBatch(seq=decision["seq"], epoch=txlog.epoch, sources=sources, tables={}, exactly_once=config.exactly_once))
        if count == 0:
            crash_point("reset_during_decide")
    crash_point("reset_after_decide")
    # Step 5
    for count, physical in enumerate(plan["delete"]):
        _delete_dir(topic_uri(root, physical))
        report.deleted_topics.append(physical)
        if count == 0:
            crash_point("reset_during_delete")
    # Step 6
    report.deleted_state = _delete_local_state(config, plan["tasks"])
    crash_point("reset_before_unplan")
    # Step 7
    reset_marker.remove_plan(root, app)
    report.kept_outputs = [t for t in dict.fromkeys([*topology.sink_topics, config.dlq_topic]) if t not in topology.internal_topics and Topic.exists(root, t)]
    report.seconds = time.perf_counter() - started
    log.info("application %s reset to %s", app, plan["target"])
    return report


# -- checks and targets ---------------------------------------------------------------------------


def _input_topics(topology: Topology) -> list[str]:
    """Input topics whose position a target sets (global tables are always read from the start)."""
    global_topics = {t for sub in topology.subtopologies for t in sub.global_topics}
    return [t for t in topology.source_topics if t not in global_topics]


def _target_positions(topology: Topology, config: StreamsConfig, target: ResetTarget) -> dict[str, object]:
    inputs = _input_topics(topology)
    if target.versions is not None:
        unknown = sorted(set(target.versions) - set(inputs))
        missing = sorted(set(inputs) - set(target.versions))
        if unknown or missing:
            raise ResetError(
                f"--to-version must name every input topic of {config.application_id} once ({', '.join(inputs)}): "
                + (f"not input topics: {', '.join(unknown)}" if unknown else f"missing: {', '.join(missing)}")
            )
    positions: dict[str, object] = {}
    for topic in inputs:
        if topic in config.kafka.source_topics:
            positions[topic] = _kafka_position(topology, config, topic, target)
            continue
        physical = topology.physical_topic(config.application_id, topic)
        if not Topic.exists(config.root, physical):
            raise ResetError(f"input topic '{topic}' does not exist under {config.root}/topics")
        uri = topic_uri(config.root, physical)
        latest = open_table(uri).version()
        if target.earliest:
            positions[topic] = -1
        elif target.latest:
            positions[topic] = latest
        elif target.timestamp_ms is not None:
            positions[topic] = _version_before(uri, latest, target.timestamp_ms)
        else:
            version = target.versions[topic]
            if not -1 <= version <= latest:
                raise ResetError(f"--to-version {topic}={version}: the topic's versions are 0 to {latest} (-1: before the first)")
            positions[topic] = version
    # Global tables are re-read from the start: their stores go with the local state.
    return positions


def _version_before(uri: str, latest: int, timestamp_ms: int) -> int:
    """The last version committed before ``timestamp_ms`` (-1 if none)."""
    for version in range(latest, -1, -1):
        actions = read_commit(uri, version)
        if actions is None:
            raise ResetError(f"cannot find the version of {uri} at that time: its commits up to version {version} are gone (log cleanup); use --to-version")
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if int(info.get("timestamp", 0)) < timestamp_ms:
            return version
    return -1


def _kafka_position(topology: Topology, config: StreamsConfig, topic: str, target: ResetTarget) -> dict[int, int]:
    if not (target.earliest or target.latest):
        raise ResetError(f"input topic '{topic}' is in Kafka: only --to-earliest and --to-latest reset it (its positions are offsets, not Delta versions)")
    from deltastreams.sinks.kafka import KafkaTopic, partition_count, watermarks

    node = next(n for n in topology.nodes.values() if isinstance(n, SourceNode) and topic in n.topics)
    kafka = config.kafka
    handle = KafkaTopic(kafka.bootstrap_servers, topic, kafka.key_format, kafka.value_format, node.key_type, node.value_type, dict(kafka.client))
    bounds = watermarks(handle, range(partition_count(handle)))
    return {p: (low if target.earliest else high) for p, (low, high) in bounds.items()}


def _restore(position):
    """A position as the plan's JSON gives it back (Kafka offsets have text keys there)."""
    return {int(p): o for p, o in position.items()} if isinstance(position, dict) else position


def _least(ends: list):
    if all(isinstance(e, dict) for e in ends):
        return {p: min(e.get(p, 0) for e in ends) for p in set().union(*ends)}
    return min(e for e in ends if not isinstance(e, dict))


# -- deleting -------------------------------------------------------------------------------------


def _deleted_topics(topology: Topology, config: StreamsConfig) -> list[str]:
    app = config.application_id
    internal = [topology.physical_topic(app, t) for t in sorted(topology.internal_topics)]
    changelogs = [topology.stores[s].changelog_topic(app) for s in sorted(topology.stores)]
    return list(dict.fromkeys(internal + changelogs))


def _delete_dir(uri: str) -> None:
    fs, path = filesystem_for(uri)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def _task_count(topology: Topology, config: StreamsConfig, sub) -> int:
    counts = [
        Topic.open(config.root, topology.physical_topic(config.application_id, t)).partitions
        for t in sub.partitioned_topics
        if t not in config.kafka.source_topics and Topic.exists(config.root, topology.physical_topic(config.application_id, t))
    ]
    return max(counts, default=0)


def _delete_local_state(config: StreamsConfig, tasks: dict[str, int]) -> str | None:
    """This machine's state of the application, its logs kept; its task hosts (left by a killed
    driver) are asked to exit first, closing their stores."""
    state_dir = os.path.abspath(config.local_state_dir)
    task_host.stop_hosts(task_host.host_name(state_dir, config.application_id, f"{sub}_{p}") for sub, n in tasks.items() for p in range(n))
    base = Path(state_dir) / config.application_id
    if not base.is_dir():
        return None
    for child in base.iterdir():
        if child.name != "logs":
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
    return str(base)


__all__ = ["ResetError", "ResetReport", "ResetTarget", "parse_timestamp", "reset"]
