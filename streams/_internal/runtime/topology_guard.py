"""The start-up guard of topology upgrades (docs/operations.md, "Upgrading a topology").

Each sub-topology's transaction log keeps, as its table property ``deltastreams.topology``, the
:class:`~deltastreams.topology.upgrade.TopologyRecord` of the topology its decided batches were committed
under. The property is set by the first decided batch of a start whose topology differs from the
recorded one (:meth:`deltastreams.sinks.transaction.TransactionLog.keep_with_next_decision`): atomically with
state produced under it, so a start that is stopped before committing anything leaves the record
as it was (rolling back to the old topology then needs nothing), and no other batch pays for it.

At start, before anything is written (no epoch registered, no instance fenced): the records are
read, :func:`deltastreams.topology.upgrade.lost_state` lists what the new topology would not find, and the start
is refused with :class:`TopologyUpgradeError` naming each (with what it holds), unless
``topology_upgrade = "accept_loss"`` (then a warning). A log without a record (a first start, or
state committed before records existed) is not compared: it is recorded on its first batch.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from deltastreams.conf import StreamsConfig, TopologyUpgrade
from deltastreams.conf.errors import DeltaStreamsError, TopologyUpgradeError
from deltastreams.sinks import Topic, files_added, snapshot_files, table_exists
from deltastreams.sinks.transaction import TransactionLog, log_property
from deltastreams.streams._internal.runtime.committer import Committer, transaction_log_uri
from deltastreams.topology.graph import Topology
from deltastreams.topology.nodes import StoreSpec, TableSourceNode
from deltastreams.topology.upgrade import Change, Kind, TopologyRecord, lost_state, records_of

log = logging.getLogger("deltastreams")

TOPOLOGY_PROPERTY = "deltastreams.topology"


def committed_records(topology: Topology, config: StreamsConfig) -> dict[int, TopologyRecord]:
    """The recorded topology of every sub-topology log that has one: those of ``topology``'s ids,
    and those of ids the recorded topologies had and ``topology`` lacks (their state is lost too)."""
    ids = [s.id for s in topology.subtopologies]

    def read(sub_id: int) -> tuple[int, str | None]:
        return sub_id, log_property(transaction_log_uri(config, sub_id), TOPOLOGY_PROPERTY)

    records: dict[int, TopologyRecord] = {}
    seen: set[int] = set()
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(ids)))) as pool:
        while ids:
            seen.update(ids)
            for sub_id, text in pool.map(read, ids):
                if text is not None:
                    records[sub_id] = TopologyRecord.from_json(text)
            ids = sorted({i for r in records.values() for i in r.subtopologies} - seen)
    return records


def check_topology_upgrade(topology: Topology, config: StreamsConfig) -> dict[int, str]:
    """Refuse (or, if accepted, warn about) a topology that would ignore committed state; returns
    the record to keep in each log whose recorded topology differs (by sub-topology id)."""
    current = records_of(topology)
    committed = committed_records(topology, config)
    changes = lost_state(committed, topology)
    if changes:
        lines = tuple(_describe(change, config) for change in changes)
        listed = "\n".join(f"  - {line}" for line in lines)
        if config.topology_upgrade is TopologyUpgrade.ACCEPT_LOSS:
            log.warning(
                "application %s starts without state committed under its previous topology (topology_upgrade = accept_loss):\n%s",
                config.application_id, listed,
            )  # fmt: skip
        else:
            raise TopologyUpgradeError(
                f"application {config.application_id}'s new topology would ignore state committed under its previous one:\n{listed}\n"
                "(unnamed operators take generated names from one counter, so an operator added upstream renames the stores and "
                "repartition topics after it; sub-topology ids follow the order streams are built)",
                application_id=config.application_id,
                changes=lines,
                action=_action(changes, topology),
            )
    return {sub_id: record.to_json() for sub_id, record in current.items() if committed.get(sub_id) != record}


def keep_records(committer: Committer, records: dict[int, str]) -> None:
    """Have each log record its sub-topology's topology with its next decided batch."""
    for sub_id, text in records.items():
        committer.logs[sub_id].keep_with_next_decision({TOPOLOGY_PROPERTY: text})


# -- the message -----------------------------------------------------------------------------------


def _describe(change: Change, config: StreamsConfig) -> str:
    if change.kind is Kind.STORE:
        held = _held(lambda: _store_entries(config, change.old), "committed entries")
        return f"store {change.old} -> {change.new} ({held} would be ignored)" if change.new else f"store {change.old} dropped ({held} would be ignored)"
    if change.kind is Kind.REPARTITION_TOPIC:
        held = _held(lambda: _unconsumed_records(config, change.old, change.subtopology), "records not yet consumed")
        if change.new:
            return f"repartition topic {change.old} -> {change.new} ({held} would be ignored)"
        return f"repartition topic {change.old} dropped ({held} would be ignored)"
    return (
        f"sub-topology {change.subtopology} read {change.old}, now reads {change.new} (its transaction log's committed positions "
        f"in {change.old} would be ignored)"
    )


def _held(counting, what: str) -> str:
    """``its 12,345 <what>``, or ``its <what>`` if they cannot be counted (a log cut by retention)."""
    try:
        return f"its {counting():,} {what}"
    except DeltaStreamsError:
        return f"its {what}"


def _store_entries(config: StreamsConfig, store: str) -> int:
    """Records of the store's changelog (compacted: about one per key)."""
    changelog = StoreSpec(store).changelog_topic(config.application_id)
    if not Topic.exists(config.root, changelog):
        return 0
    return sum(max(f.num_records, 0) for f in snapshot_files(Topic.open(config.root, changelog).delta_table()))


def _unconsumed_records(config: StreamsConfig, topic: str, reader: int) -> int:
    """Records of the repartition topic after the position its reader's log committed."""
    physical = f"{config.application_id}-{topic}"
    if not Topic.exists(config.root, physical):
        return 0
    uri = transaction_log_uri(config, reader)
    last = TransactionLog(uri, "").last_decided() if table_exists(uri) else None
    position = last.sources.get(topic, (-1, -1))[1] if last is not None else -1
    topic = Topic.open(config.root, physical)
    return sum(max(f.num_records, 0) for f in files_added(topic.uri, position, topic.version()))


def _action(changes: list[Change], topology: Topology) -> str:
    keep = [hint for change in changes if (hint := _keep_hint(change, topology, changes))]
    lines = []
    if keep:
        lines.append("to keep the committed state, give the old names back: " + "; ".join(keep))
    lines.append(
        'to start without it, set topology_upgrade = "accept_loss" (--set topology_upgrade=accept_loss; '
        "--accept-topology-change on an application's run command)"
    )
    lines.append(
        "from now on, name stateful steps so their names stop shifting: name= on count/reduce/aggregate names the store "
        "(and the repartition topic before it, unless group_by_key(name=...) or group_by(..., name=...) names that); "
        "repartition(name=...), builder.table(..., name=...), join(..., name=..., store_name=...); build new streams after "
        "the existing ones (sub-topology ids follow build order)"
    )
    return "\n  ".join(lines)


def _keep_hint(change: Change, topology: Topology, changes: list[Change]) -> str | None:
    if change.new is None:
        return None
    if change.kind is Kind.STORE:
        owner = next((n for n in topology.nodes.values() if getattr(n, "store", None) == change.new), None)
        aggregation = getattr(owner, "aggregation", None)
        if aggregation is not None:
            return f'{aggregation.kind.value}(..., name="{change.old}") on {owner.name}'
        if isinstance(owner, TableSourceNode) and owner.name.startswith("KTABLE-SOURCE"):  # builder.table's
            return f'table(..., name="{change.old}") on {owner.name}'
        return None
    if change.kind is Kind.REPARTITION_TOPIC:
        prefix = change.old.removesuffix("-repartition")
        if any(c.kind is Kind.STORE and c.old == prefix and c.new for c in changes):
            return f"{change.old} comes back with its store's old name"
        return f'name="{prefix}" on the group_by_key, group_by or repartition writing {change.new}'
    return None
