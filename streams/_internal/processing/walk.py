"""Where a step stands in Kafka's depth-first walk of one input record through a sub-topology.

Kafka hands a task's input records to the sub-topology one at a time, and each goes depth first:
a processor forwards every record it makes to its children in the order they were added, and a
child runs to the end of its branch before the next child, or the next record, comes up. The
core runs a whole batch operator by operator instead, so an operator reading a table by key must
be told where in that walk it stands (:mod:`deltastreams.streams._internal.processing.table`): its **turn**.
``_seq`` (the input record) orders the turns of different input records; this module orders the
turns within one.

One input record may reach an operator as several records: an operator forwarded several for
one (``flat_map``, a processor, a stream-stream join's matches, a window or a suppressed result
per record), or branches of the record meet again (``merge``, a cogroup, a table-table join, two
sources meeting). Each record carries its path through those forks in the flow's ``_walk``
column (absent: no fork yet), a string of entries ``(rank, index)``:

- an operator that forwarded several records for one record (same ``_seq``, same ``_walk``)
  gives each the entry ``(its rank, index among them, in forwarding order)``
  (:func:`number_forks`, run by the task on every output, so no operator has to);
- a record entering an operator with several parents gets ``(rank of that edge, 0)``
  (:func:`enter`): the edge's rank is where the walk comes down it, so what follows the meeting
  point is ordered by the branch the record came down, not by the point's own place (which is
  the place of the branch first walked);
- a punctuation comes after the whole walk of the record it follows (:data:`PUNCTUATION`).

Ranks (:func:`walk_ranks`) number nodes and edges in the order of the walk: an edge gets an
even rank, the node first reached over it the odd rank after it, so a second edge into a node
sorts after everything walked before it and before what comes next. An operator's turn for a
record is ``(_seq, _walk + its rank)``, compared as bytes (entries and ranks are big-endian and
fixed-width): a step before a fork comes before everything after it (a prefix sorts first); two
paths split at their first different entry, exactly where Kafka's walk split them; two steps on
one path with no fork between compare by rank, as the walk met them.

``_seq`` stays the index of the input record: dead-letter references, headers, stream times and
punctuation keep indexing by it, and records of one input record still share it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.streams._internal.processing.flow import WALK, Flow

_ENTRY = struct.Struct(">HI")
_RANK = struct.Struct(">H")
ENTRY_SIZE = _ENTRY.size

PUNCTUATION = _ENTRY.pack(0xFFFF, 0)
"""The walk of a punctuation's records: after every step of the input record it follows
(ranks stay below 0xFFFF)."""

Turn = tuple[int, bytes]
AT_START: Turn = (-(2**63), b"")
AT_END: Turn = (2**63, b"")
"""Turns before and after every step of a batch."""


def walk_ranks(children: Mapping[str, Sequence[str]], sources: Sequence[str], members: set[str]) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Ranks of the nodes and of the edges ``(parent, child)`` among ``members``, in the order
    Kafka's depth-first walk from ``sources`` (in order) meets them, children in the order they
    were added."""
    nodes: dict[str, int] = {}
    edges: dict[tuple[str, str], int] = {}
    stack: list[tuple[str | None, str]] = [(None, s) for s in reversed(sources)]
    while stack:
        parent, name = stack.pop()
        if parent is not None:
            edges.setdefault((parent, name), 2 * len(nodes))
        if name in nodes:
            continue
        nodes[name] = 2 * len(nodes) + 1
        stack.extend((name, c) for c in reversed(children[name]) if c in members)
    if 2 * len(nodes) + 1 >= 0xFFFF:
        raise ValueError(f"a sub-topology of {len(nodes)} nodes is too large to rank (at most 32766)")
    return nodes, edges


RANK_SIZE = _RANK.size


def fork_entry(rank: int, index: int) -> bytes:
    """The walk entry :func:`number_forks` gives the ``index``-th of records operator ``rank``
    forwarded for one record."""
    return _ENTRY.pack(rank, index)


def turn(seq: int, walk: bytes, rank: int) -> Turn:
    return (seq, walk + _RANK.pack(rank))


def walks(flow: Flow) -> list[bytes] | None:
    """Each record's walk; None when no record has forked yet."""
    if WALK not in flow.table.column_names:
        return None
    return [w or b"" for w in flow.table.column(WALK).to_pylist()]


def turns(flow: Flow, rank: int, *, trim: int = 0) -> list[Turn]:
    """The turn of operator ``rank`` for each record of ``flow``; ``trim``: as the record stood
    that many forks earlier (entries added since are dropped)."""
    tail = _RANK.pack(rank)
    seqs = flow.seqs.tolist()
    paths = walks(flow)
    if paths is None:
        return [(s, tail) for s in seqs]
    cut = trim * ENTRY_SIZE
    return [(s, (w[: max(len(w) - cut, 0)] if cut else w) + tail) for s, w in zip(seqs, paths, strict=True)]


def _with_walks(flow: Flow, column: pa.Array) -> Flow:
    table = flow.table
    if WALK in table.column_names:
        table = table.set_column(table.schema.get_field_index(WALK), WALK, column)
    else:
        table = table.append_column(WALK, column)
    return Flow(table, flow.windowed, flow._keys, flow._values)


def _extended(flow: Flow, entries: pa.Array) -> Flow:
    """``flow`` with ``entries`` (binary, one per record, empty for none) added to its walks, in
    Arrow: no record is handled in Python."""
    if WALK in flow.table.column_names:
        current = flow.table.column(WALK).combine_chunks().fill_null(b"")
        entries = pc.binary_join_element_wise(current, entries, pa.scalar(b"", pa.binary()))
    return _with_walks(flow, entries)


_ENTRIES = np.dtype([("rank", ">u2"), ("index", ">u4")])
"""_ENTRY's layout, for packing many entries at once."""


def _entries(rank: int, index: np.ndarray) -> pa.Array:
    """The entries ``(rank, index[i])``, as binary."""
    packed = np.empty(len(index), dtype=_ENTRIES)
    packed["rank"], packed["index"] = rank, index
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(ENTRY_SIZE), len(index), [None, pa.py_buffer(packed.tobytes())])
    return fixed.cast(pa.binary())


def enter(flow: Flow, edge_rank: int) -> Flow:
    """``flow``'s records as they come down the edge ranked ``edge_rank`` into an operator with
    several parents."""
    if not len(flow):
        return flow
    return _extended(flow, _entries(edge_rank, np.zeros(len(flow), dtype=np.int64)))


def number_forks(flow: Flow, rank: int) -> Flow:
    """Records of operator ``rank``'s output that share an input record and a walk were forwarded
    for one record: each gets the entry ``(rank, its index among them)``, in output order."""
    n = len(flow)
    if n < 2:
        return flow
    seqs = flow.seqs
    if (np.diff(seqs) > 0).all():
        return flow  # (the common case: one record per input record, in input order)
    if WALK in flow.table.column_names:
        ids = pc.dictionary_encode(flow.table.column(WALK).combine_chunks().fill_null(b"")).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        ids = np.zeros(n, dtype=np.int64)
    order = np.lexsort((ids, seqs))  # stable: ties keep the output order
    s, w = seqs[order], ids[order]
    first = np.r_[True, (s[1:] != s[:-1]) | (w[1:] != w[:-1])]
    if first.all():
        return flow
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    sizes = np.diff(np.r_[starts, n])
    index = np.empty(n, dtype=np.int64)
    index[order] = np.arange(n) - starts[group]
    forked = np.empty(n, dtype=bool)
    forked[order] = sizes[group] > 1
    # A record forwarded alone for its record keeps its walk as it is.
    entries = pc.if_else(pa.array(forked), _entries(rank, index), pa.scalar(b"", pa.binary()))
    return _extended(flow, entries)


def carry_walk(table: pa.Table, source: pa.Table, rows: np.ndarray | Sequence[int] | None = None) -> pa.Table:
    """``table`` (built from ``source``'s records ``rows``, or row for row) with their walks."""
    if WALK not in source.column_names:
        return table
    column = source.column(WALK)
    if rows is not None:
        column = column.take(pa.array(np.asarray(rows, dtype=np.int64)))
    return table.append_column(WALK, column)


def walk_column(paths: Sequence[bytes | None]) -> pa.Array | None:
    """A ``_walk`` column of ``paths`` (None: no fork), or None when none has any."""
    if not any(paths):
        return None
    return pa.array([p or b"" for p in paths], pa.binary())

