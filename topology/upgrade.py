"""What of a topology an application's committed state is found by, and which changes of it would
orphan that state.

Committed state is found by name: a store by its name (its changelog is
``<application_id>-<store>-changelog``), a repartition topic by its name, a sub-topology's
transaction log (source positions, batch sequence) by the sub-topology's id. Unnamed operators
take generated names from one counter (``KSTREAM-AGGREGATE-STATE-STORE-0000000003``), and
sub-topology ids follow the order sources were created, so a new operator upstream renames
everything after it, and a new stream built first renumbers sub-topologies: a start under such a
topology would find empty stores, a new repartition topic and foreign positions, silently.

Each sub-topology's log keeps a :class:`TopologyRecord` of the topology it committed under;
:func:`lost_state` compares those with a new topology. Stores and repartition topics are matched
by name; one the new topology lacks is reported renamed when a new name takes its place (the
same name but for its counter first, in the same sub-topology first), else dropped. A
sub-topology id whose log holds positions in topics the new sub-topology of that id does not read
is reported too (besides renamed repartition topics, reported as such). Additions are
compatible: a new store, topic or sub-topology (with a new id), a new source of a sub-topology.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from deltastreams.topology.graph import Topology

_COUNTER = re.compile(r"[0-9]{10}")
RECORD_VERSION = 1


@dataclass(frozen=True)
class TopologyRecord:
    """What one sub-topology's committed state is found by, plus the application's whole
    topology (its ``describe()`` text and sub-topology ids) as it was then."""

    subtopology: int
    source_topics: tuple[str, ...]
    """Logical names, repartition topics included: where its committed positions are."""
    stores: tuple[str, ...]
    internal_topics: tuple[str, ...]
    """The repartition topics it reads (the records it has not consumed yet are its to lose)."""
    subtopologies: tuple[int, ...]
    """Every sub-topology id of the application (to find the logs of ones a new topology drops)."""
    description: str

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": RECORD_VERSION,
                "subtopology": self.subtopology,
                "source_topics": list(self.source_topics),
                "stores": list(self.stores),
                "internal_topics": list(self.internal_topics),
                "subtopologies": list(self.subtopologies),
                "description": self.description,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TopologyRecord:
        raw = json.loads(text)
        return cls(
            subtopology=int(raw["subtopology"]),
            source_topics=tuple(raw["source_topics"]),
            stores=tuple(raw["stores"]),
            internal_topics=tuple(raw["internal_topics"]),
            subtopologies=tuple(int(i) for i in raw["subtopologies"]),
            description=raw["description"],
        )


def records_of(topology: Topology) -> dict[int, TopologyRecord]:
    """The record each sub-topology's log keeps of ``topology``, by sub-topology id."""
    ids = tuple(s.id for s in topology.subtopologies)
    description = str(topology.describe())
    return {
        sub.id: TopologyRecord(
            subtopology=sub.id,
            source_topics=sub.source_topics,
            stores=sub.stores,
            internal_topics=tuple(t for t in sub.source_topics if t in topology.internal_topics),
            subtopologies=ids,
            description=description,
        )
        for sub in topology.subtopologies
    }


class Kind(Enum):
    STORE = "store"
    REPARTITION_TOPIC = "repartition topic"
    POSITIONS = "sub-topology"


@dataclass(frozen=True)
class Change:
    """Committed state a new topology would not find."""

    kind: Kind
    old: str
    """The store or topic name; for positions, the topics the log holds positions in."""
    new: str | None
    """Its new name (None: dropped); for positions, the topics the sub-topology now reads."""
    subtopology: int
    """Where it was committed."""


def _shape(name: str) -> str:
    """The name with its generated counter masked: what stays when only the counter shifted."""
    return _COUNTER.sub("#", name)


def _pair(old: list[tuple[int, str]], new: list[tuple[int, str]]) -> dict[str, str | None]:
    """Old names (with their sub-topology) to the new names taking their place: the same shape in
    the same sub-topology first, then the same shape anywhere, then any new name in the same
    sub-topology (a store given a name of its own); None when none is left."""
    free = list(new)
    paired: dict[str, str | None] = {}
    for same_sub, same_shape in ((True, True), (False, True), (True, False)):
        for sub, name in old:
            if name in paired:
                continue
            match = next((n for n in free if (_shape(n[1]) == _shape(name) or not same_shape) and (n[0] == sub or not same_sub)), None)
            if match is not None:
                free.remove(match)
                paired[name] = match[1]
    return {name: paired.get(name) for _, name in old}


def lost_state(committed: Mapping[int, TopologyRecord], topology: Topology) -> list[Change]:
    """What state committed under ``committed`` (each sub-topology's own record, by id) the new
    ``topology`` would not find; empty when the upgrade is compatible."""
    new_subs = {s.id: s for s in topology.subtopologies}
    changes: list[Change] = []

    old_stores = [(sub, store) for sub, record in sorted(committed.items()) for store in record.stores]
    new_stores = set(topology.stores)
    kept = {store for _, store in old_stores}
    added_stores = [(s.id, store) for s in topology.subtopologies for store in s.stores if store not in kept]
    gone = [(sub, store) for sub, store in old_stores if store not in new_stores]
    renamed = _pair(gone, added_stores)
    changes += [Change(Kind.STORE, store, renamed[store], sub) for sub, store in gone]

    old_topics = [(sub, topic) for sub, record in sorted(committed.items()) for topic in record.internal_topics]
    kept_topics = {topic for _, topic in old_topics}
    added_topics = [(s.id, t) for s in topology.subtopologies for t in s.source_topics if t in topology.internal_topics and t not in kept_topics]
    gone_topics = [(sub, topic) for sub, topic in old_topics if topic not in topology.internal_topics]
    renamed = _pair(gone_topics, added_topics)
    changes += [Change(Kind.REPARTITION_TOPIC, topic, renamed[topic], sub) for sub, topic in gone_topics]

    reported = {topic for _, topic in gone_topics}
    for sub_id, record in sorted(committed.items()):
        sub = new_subs.get(sub_id)
        if sub is None:
            continue  # a dropped sub-topology: its stores and repartition topics are reported above
        orphaned = [t for t in record.source_topics if t not in sub.source_topics and t not in reported]
        if orphaned:
            changes.append(Change(Kind.POSITIONS, ", ".join(orphaned), ", ".join(sub.source_topics), sub_id))
    return changes
