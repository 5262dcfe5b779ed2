"""The iteration orders of the Java collections Kafka's ``TopologyDescription`` is built with, so
``describe()`` lists nodes, stores and topics in the order Kafka prints them.

Two matter: a ``HashSet<String>`` (or ``HashMap`` keys) iterates by hash bucket, and Kafka builds
a node's successors and predecessors in a ``TreeSet`` whose comparator reads sub-tree sizes that
keep growing while the set is filled, so its order is that of the red-black tree the insertions
built (Java's ``TreeMap``), not a sort by final sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, as an unsigned 32-bit value)."""
    h = 0
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "little")) & 0xFFFFFFFF
    return h


def hash_set_order(items: Iterable[str]) -> list[str]:
    """The iteration order of a Java ``HashSet<String>`` (or ``HashMap<String, ...>``) the items
    were added to in this order: by bucket (``hash ^ hash >>> 16``, masked by the table size, 16
    doubled while more than three quarters full), then in insertion order within a bucket (a
    resize keeps it). Buckets long enough to become trees (8 entries) are not modelled."""
    items = list(dict.fromkeys(items))
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(text: str) -> int:
        h = java_string_hash(text)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(items, key=bucket)  # stable: insertion order within a bucket


class _Entry:
    __slots__ = ("item", "left", "right", "parent", "black")

    def __init__(self, item: Any, parent: _Entry | None) -> None:
        self.item, self.parent = item, parent
        self.left: _Entry | None = None
        self.right: _Entry | None = None
        self.black = False


class TreeSet:
    """Java's ``TreeSet`` (a ``TreeMap``'s red-black tree, its insertion and rebalancing) with a
    comparator that may change its mind between insertions: iteration follows the tree, as in
    Java, whatever the comparator says now."""

    def __init__(self, compare: Callable[[Any, Any], int]) -> None:
        self.compare = compare
        self.root: _Entry | None = None

    def add(self, item: Any) -> bool:
        if self.root is None:
            self.root = _Entry(item, None)
            self.root.black = True
            return True
        node = self.root
        while True:
            cmp = self.compare(item, node.item)
            if cmp == 0:
                return False
            child = node.left if cmp < 0 else node.right
            if child is None:
                entry = _Entry(item, node)
                if cmp < 0:
                    node.left = entry
                else:
                    node.right = entry
                self._fix_after_insertion(entry)
                return True
            node = child

    def __iter__(self) -> Iterator[Any]:
        stack, node = [], self.root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.item
            node = node.right

    # -- TreeMap.fixAfterInsertion and its rotations ---------------------------------------------

    @staticmethod
    def _black(e: _Entry | None) -> bool:
        return e is None or e.black

    def _fix_after_insertion(self, x: _Entry) -> None:
        x.black = False
        while x is not None and x is not self.root and not x.parent.black:
            parent = x.parent
            grand = parent.parent
            if parent is grand.left:
                uncle = grand.right
                if not self._black(uncle):
                    parent.black, uncle.black, grand.black = True, True, False
                    x = grand
                else:
                    if x is parent.right:
                        x = parent
                        self._rotate_left(x)
                    x.parent.black = True
                    x.parent.parent.black = False
                    self._rotate_right(x.parent.parent)
            else:
                uncle = grand.left
                if not self._black(uncle):
                    parent.black, uncle.black, grand.black = True, True, False
                    x = grand
                else:
                    if x is parent.left:
                        x = parent
                        self._rotate_right(x)
                    x.parent.black = True
                    x.parent.parent.black = False
                    self._rotate_left(x.parent.parent)
        self.root.black = True

    def _replace_child(self, p: _Entry, r: _Entry) -> None:
        r.parent = p.parent
        if p.parent is None:
            self.root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r

    def _rotate_left(self, p: _Entry) -> None:
        r = p.right
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        self._replace_child(p, r)
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _Entry) -> None:
        left = p.left
        p.left = left.right
        if left.right is not None:
            left.right.parent = p
        self._replace_child(p, left)
        left.right = p
        p.parent = left
