"""Rescaling a stopped application's internal topics to N partitions (beyond Kafka Streams, which
must be reset to change them): ``python -m deltastreams.jobs.rescale --root R --application-id A --partitions N``.

What changes: every repartition topic (its records not yet consumed), and the changelog of every
store of a sub-topology that reads a repartition topic, now have N partitions, so the next run has
N tasks there. Input topics are the user's and keep their partitions (as in Kafka); so do sink
topics. Each key's state moves to the task its key now hashes to (Kafka's default partitioner,
``murmur2(key bytes) % N``, the repartition topic's own rule).

Stream time of a new task (what this module implements, precisely): per windowed store, the
largest *aggregate timestamp* among the windows its keys bring, where a window's aggregate
timestamp is the largest timestamp of the records that window counted (Kafka's
``max(record timestamp, previous aggregate timestamp)``); no window: no stream time yet (-1). The
windows a store still holds are exactly its open ones (``end + grace > stream time``: closed ones
are purged in the batch that closes them), so this is the largest timestamp a key brought among
the records its open windows counted. Records that a key brought but that no open window
remembers (dropped as late, or in windows already closed and purged) are not counted: a task keeps
no per-key time, only its windows, so that is all a rescale can know. Lateness after the rescale
is then judged, per new task, as if its keys had always been together and had brought those
records. Unconsumed repartition records of different old partitions that meet in one new
partition are interleaved by always taking the old partition whose next record has the smallest
timestamp (ties: the lower old partition), the choice Kafka's PartitionGroup makes between input
partitions; one key's records keep their order (a key was in one old partition).

Stores supported: windowed (time windows) and key-value aggregations (count, reduce, aggregate),
revisions only. Others (sessions, sliding windows, joins, suppression, emit-final, cogroups,
Processor API stores) are refused with a clear error before anything changes.

Crash safety: a plan file plus idempotent steps, rolled forward by running the command again.
1. Checks; then, per sub-topology, register a new epoch in its transaction log (fencing any live
   instance: its next commit fails) and roll its last decided batch forward, as a start does.
2. Staging: the new tables are built from the committed state under ``<root>/rescale/<app>/staged``
   (new Delta tables: a changelog with a new table id makes every local store rebuild itself from
   it, see :mod:`deltastreams.state.task_stores`). A crash here leaves the application untouched; running again
   discards the staged tables and starts over.
3. The plan, naming every move and every transaction-log decision, is written by an atomic rename:
   the point of no return.
4. Switch: per topic, the live table is moved aside and the staged one moved in (two directory
   renames, each skipped when already done); per sub-topology reading a repartition topic, a
   decided batch with no output records sets its position in the new repartition topic to
   "nothing consumed" (skipped when the log already holds it). The new repartition table carries
   the ``txn`` versions of its writers, so rolling their last batch forward does not publish it
   again. Then the old tables and the plan are removed.
While a plan exists, the application refuses to start. Why not one atomic commit: the switch spans
several tables and transaction logs, and Delta commits one table at a time; a marker with idempotent
steps is the commit protocol's own shape (decide, then publish idempotently). Directory renames
need a local (or mounted) filesystem: object-store roots are refused.
"""

from __future__ import annotations

import heapq
import logging
import shutil
import struct
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.sinks import Topic, commit_rewrite, create_topic_with_layout, is_object_store, open_table, partition_for, partitions_for, topic_uri
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog
from deltastreams.streams._internal.runtime.committer import Committer
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams._internal.runtime.registry import TopicRegistry
from deltastreams.streams._internal.runtime.rescale_marker import plan_path, read_plan, rescale_dir, write_plan
from deltastreams.streams._internal.runtime.reset_marker import require_no_reset
from deltastreams.streams.status import refuse_while_running
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import (
    AggregateNode,
    AggregationKind,
    CogroupAggregateNode,
    StreamStreamJoinNode,
    StreamTableJoinNode,
    SuppressNode,
    TableTableJoinNode,
    Windows,
)

log = logging.getLogger("deltastreams")

_TIME = struct.Struct(">q")
_STREAM_TIME_KEY = b"\xff\xffstream-time"
_FLOOR_KEY = b"\xff\xfffloor"
_COUNT = struct.Struct(">qq")
_JOINS = (StreamTableJoinNode, StreamStreamJoinNode, TableTableJoinNode, CogroupAggregateNode)


class RescaleError(DeltaStreamsError):
    """The rescale was refused; nothing changed. The message says why and what to do."""


@dataclass
class RescaleReport:
    partitions: int
    repartition_records: dict[str, int] = field(default_factory=dict)
    """Per repartition topic: unconsumed records rewritten."""
    store_entries: dict[str, int] = field(default_factory=dict)
    """Per changelog: entries (keys and windows) moved."""
    stream_times: dict[str, list[int]] = field(default_factory=dict)
    """Per store: the stream time of each new task."""
    resumed: bool = False
    """An earlier run's switch was finished."""
    seconds: float = 0.0


def rescale(topology: Topology, config: StreamsConfig, partitions: int, *, force: bool = False) -> RescaleReport:
    """Rescale the stopped application ``config.application_id`` under ``config.root`` (see the
    module docstring). It refuses while an instance holding the application is alive (its
    heartbeat, as ``status`` and ``reset`` judge it), unless ``force``: that instance is known
    dead (the rescale fences it)."""
    started = time.perf_counter()
    root, app = config.root, config.application_id
    if not isinstance(partitions, int) or partitions < 1:
        raise RescaleError(f"--partitions must be at least 1, got {partitions}")
    targets = _targets(topology)
    _check_supported(topology, targets)  # before touching anything
    if is_object_store(root):
        raise RescaleError(f"rescale switches tables by renaming directories and needs a local or mounted filesystem; {root} is an object store")
    if not Path(root).is_dir():
        raise RescaleError(f"root {root} does not exist")
    logs = _transaction_logs(root, app, topology)
    require_no_reset(root, app)  # its topics may be half deleted
    report = RescaleReport(partitions)
    plan = read_plan(root, app)
    if plan is not None and plan["phase"] == "switch":
        if plan["partitions"] != partitions:
            raise RescaleError(
                f"an earlier rescale of {app} to {plan['partitions']} partitions passed its point of no return; finish it first "
                f"(--partitions {plan['partitions']}), then rescale again"
            )
        _switch(root, app, plan)
        report.resumed = True
        report.seconds = time.perf_counter() - started
        return report
    if plan is None:
        refuse_while_running(config, [sub.id for sub in topology.subtopologies], "rescale", RescaleError, force)
    shutil.rmtree(rescale_dir(root, app) / "staged", ignore_errors=True)  # an earlier run's, never switched
    write_plan(root, app, {"phase": "staging", "partitions": partitions, "id": uuid.uuid4().hex})

    registry = TopicRegistry(config, topology)
    committer = Committer(registry)
    committer.recover(topology.subtopologies)  # fences live instances, rolls last batches forward
    crash_point("rescale_after_recover")

    staged_root = str(rescale_dir(root, app) / "staged")
    moves: list[dict] = []
    decisions: list[dict] = []
    rewritten: set[str] = set()
    for sub in targets:
        sources = {t: [end, end] for t, end in committer.positions[sub.id].items()}
        for topic in sorted(t for t in sub.source_topics if t in topology.internal_topics):
            if topic in rewritten:
                continue
            rewritten.add(topic)
            physical = topology.physical_topic(app, topic)
            if not Topic.exists(root, physical):
                continue  # never written: created with the new count on first write
            writers = [committer.txn_app_id(s.id) for s in topology.subtopologies if topic in s.sink_topics]
            count = _stage_repartition(root, staged_root, physical, committer.position(sub.id, topic), partitions, writers)
            report.repartition_records[physical] = count
            moves.append(_move(root, staged_root, physical))
        for topic in (t for t in sub.source_topics if t in topology.internal_topics):
            sources[topic] = [0, 0]  # the new table's version 0: nothing of it consumed
        for store in sub.stores:
            node = _aggregate_of(topology, store)
            physical = topology.stores[store].changelog_topic(app)
            if not Topic.exists(root, physical):
                continue
            entries, times = _stage_changelog(root, staged_root, physical, node, partitions)
            report.store_entries[physical] = entries
            if times is not None:
                report.stream_times[store] = times
            moves.append(_move(root, staged_root, physical))
        last = committer.last[sub.id]
        decisions.append({"subtopology": sub.id, "seq": last.seq + 1 if last is not None else 0, "sources": sources})
    crash_point("rescale_after_staging")
    plan = {"phase": "switch", "partitions": partitions, "moves": moves, "decisions": decisions}
    write_plan(root, app, plan)  # the point of no return
    crash_point("rescale_after_plan")
    _switch(root, app, plan)
    report.seconds = time.perf_counter() - started
    return report


# -- checks ---------------------------------------------------------------------------------------


def _transaction_logs(root: str, app: str, topology: Topology) -> dict[int, str]:
    base = Path(root) / "transactions" / app
    if not base.is_dir():
        raise RescaleError(f"no application {app!r} under {root}: {base} does not exist (a run creates it)")
    logs = {sub.id: str(base / f"subtopology-{sub.id}") for sub in topology.subtopologies}
    missing = [uri for uri in logs.values() if not (Path(uri) / "_delta_log").is_dir()]
    if missing:
        raise RescaleError(f"application {app!r} under {root} has no transaction log at {missing[0]}: it never ran this topology")
    return logs


def _targets(topology: Topology):
    return [sub for sub in topology.subtopologies if any(t in topology.internal_topics for t in sub.source_topics)]


def _aggregate_of(topology: Topology, store: str) -> AggregateNode:
    owners = [n for n in topology.nodes.values() if store in n.stores]
    node = owners[0] if len(owners) == 1 else None
    if (
        not isinstance(node, AggregateNode)
        or node.emit_final
        or getattr(node.aggregation, "by_input", None)
        or (node.windows is not None and not isinstance(node.windows, Windows))
    ):
        kind = type(node).__name__ if node is not None else f"{len(owners)} processors"
        raise RescaleError(
            f"store {store!r} ({kind}) cannot be rescaled: only the stores of windowed (time windows) and key-value aggregations "
            "emitting revisions can (not sessions, sliding windows, joins, suppression, emit-final, cogroups or Processor API stores)"
        )
    return node


def _check_supported(topology: Topology, targets) -> None:
    if not targets:
        raise RescaleError("the topology has no repartition topic: nothing to rescale (input topics are the user's, as in Kafka)")
    for sub in targets:
        for store in sub.stores:
            _aggregate_of(topology, store)
    for sub in targets:
        for name in sub.nodes:
            node = topology.nodes[name]
            if isinstance(node, SuppressNode):
                raise RescaleError(f"{name}: suppression buffers cannot be rescaled")
            if isinstance(node, _JOINS):
                raise RescaleError(
                    f"{name}: sub-topology {sub.id} joins its repartition topic with other topics, which must keep the same "
                    "partition count (co-partitioning); rescaling it alone would break the join"
                )


# -- staging --------------------------------------------------------------------------------------


def _move(root: str, staged_root: str, physical: str) -> dict:
    return {
        "live": topic_uri(root, physical),
        "staged": topic_uri(staged_root, physical),
        "aside": str(Path(staged_root).parent / "replaced" / "topics" / physical),
    }


def _new_topic(staged_root: str, physical: str, old: Topic, partitions: int) -> Topic:
    return create_topic_with_layout(staged_root, physical, replace(old.layout, partitions=partitions))


def _stage_repartition(root: str, staged_root: str, physical: str, consumed: int, partitions: int, writers: list[str]) -> int:
    """The unconsumed records (versions after ``consumed``), re-partitioned, as version 1 of a new
    table (version 0: its creation, which the reader's new position names)."""
    old = Topic.open(root, physical)
    records = old.read(after_version=consumed if consumed >= 0 else None)
    new = _new_topic(staged_root, physical, old, partitions)
    files = []
    if records.num_rows:
        target = partitions_for(records.column("key"), partitions)
        source = records.column("partition").to_numpy(zero_copy_only=False)
        stamps = records.column("timestamp").to_numpy(zero_copy_only=False)
        order = []
        for q in range(partitions):
            rows = np.flatnonzero(target == q)
            sequences = [[(int(stamps[i]), int(i)) for i in rows[source[rows] == p]] for p in np.unique(source[rows])]
            order += [i for _, i in heapq.merge(*sequences, key=lambda r: r[0])]  # smallest head timestamp first
        chosen = records.take(pa.array(order, pa.int64()))
        chosen = chosen.set_column(chosen.schema.get_field_index("partition"), "partition", pa.array(target[order], pa.int32()))
        files = new.prepare_files(chosen.drop_columns(["offset"]), {}, transient=True)
    txns = {app_id: v for app_id in writers if (v := old.delta_table().transaction_version(app_id)) is not None}
    if commit_rewrite(new.uri, 0, files, txns) is None:
        raise RescaleError(f"the staged table {new.uri} changed under the rescale: is another rescale running?")
    return records.num_rows


def _decode_timestamp(node: AggregateNode, raw: bytes) -> int:
    if node.aggregation.kind is AggregationKind.COUNT:
        return _COUNT.unpack(raw)[1]
    import pickle

    return int(pickle.loads(raw)[1])


def _stage_changelog(root: str, staged_root: str, physical: str, node: AggregateNode, partitions: int) -> tuple[int, list[int] | None]:
    """The store's committed state (its changelog replayed, per old task), each key moved to its
    new task; a windowed store's new stream times (module docstring). One entry per key (a
    compacted changelog), in key order."""
    old = Topic.open(root, physical)
    table = old.read()
    state: dict[bytes, bytes] = {}
    for p in range(old.partitions):
        part = table.filter(pc.equal(table.column("partition"), p))
        for key, value in zip(part.column("key").to_pylist(), part.column("value").to_pylist(), strict=True):
            if node.windows is not None and key.startswith(b"\xff\xff"):  # a window store's own entries (data keys start with a time >= 0)
                if key in (_STREAM_TIME_KEY, _FLOOR_KEY):
                    continue  # recomputed per new task / an optimisation that a missing floor only turns off
                raise RescaleError(f"changelog {physical} holds bookkeeping {key!r} that rescale does not know how to move")
            if value is None:
                state.pop(key, None)
            else:
                state[key] = value
    windowed = node.windows is not None
    by_task: list[list[tuple[bytes, bytes, int]]] = [[] for _ in range(partitions)]
    times = [-1] * partitions
    for key in sorted(state):
        value = state[key]
        key_bytes = key[8:] if windowed else key
        q = partition_for(key_bytes, partitions)
        stamp = _decode_timestamp(node, value)
        by_task[q].append((key, value, stamp))
        if windowed:
            times[q] = max(times[q], stamp)
    new = _new_topic(staged_root, physical, old, partitions)
    keys, values, stamps, parts = [], [], [], []
    for q, entries in enumerate(by_task):
        rows = list(entries)
        if windowed and times[q] >= 0:
            rows.append((_STREAM_TIME_KEY, _TIME.pack(times[q]), times[q]))
        for key, value, stamp in rows:
            keys.append(key)
            values.append(value)
            stamps.append(stamp)
            parts.append(q)
    records = pa.table(
        {"partition": pa.array(parts, pa.int32()), "timestamp": pa.array(stamps, pa.int64()), "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}
    )
    files = new.prepare_files(records, {}, transient=True)
    if commit_rewrite(new.uri, 0, files, {}) is None:
        raise RescaleError(f"the staged table {new.uri} changed under the rescale: is another rescale running?")
    return len(state), (times if windowed else None)


# -- the switch (idempotent, rolled forward by a rerun) --------------------------------------------


def _switch(root: str, app: str, plan: dict) -> None:
    for move in plan["moves"]:
        live, staged, aside = Path(move["live"]), Path(move["staged"]), Path(move["aside"])
        if not staged.exists():
            continue  # moved in already
        if live.exists() and not aside.exists():
            aside.parent.mkdir(parents=True, exist_ok=True)
            live.rename(aside)
        crash_point("rescale_during_switch")
        staged.rename(live)
    instance = f"rescale-{uuid.uuid4().hex[:8]}"
    for decision in plan["decisions"]:
        sub = decision["subtopology"]
        txlog = TransactionLog(str(Path(root) / "transactions" / app / f"subtopology-{sub}"), f"{app}/subtopology-{sub}")
        txlog.register(instance)
        last = txlog.last_decided()
        if last is not None and last.seq >= decision["seq"]:
            continue  # decided by an earlier run
        crash_point("rescale_before_decide")
        sources = {t: (start, end) for t, (start, end) in decision["sources"].items()}
        txlog.decide(DecidedBatch(seq=decision["seq"], epoch=txlog.epoch, sources=sources, tables={}))
    crash_point("rescale_after_switch")
    shutil.rmtree(rescale_dir(root, app) / "replaced", ignore_errors=True)
    shutil.rmtree(rescale_dir(root, app) / "staged", ignore_errors=True)
    plan_path(root, app).unlink(missing_ok=True)
    log.info("application %s rescaled to %d partitions", app, plan["partitions"])


__all__ = ["RescaleError", "RescaleReport", "rescale"]
