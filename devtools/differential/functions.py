"""The user functions of the scenario catalogue, in Python: each family is spelled exactly as its
Java twin in ``jvm/src/main/java/deltastreams/oracle/Functions.java``, which Kafka Streams runs.
Values are decimal strings of small integers (or None; sums and differences may go negative, and
``%`` is Python's floor modulo, ``Math.floorMod`` there); keys are short strings (or None)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltastreams.streams.processor import Processor, PunctuationType, Record


def num(value: str) -> int:
    return int(value)


def filter_(m: int, r: int, keep_null: bool) -> Callable[[Any, Any], bool]:
    """Keeps a record whose value mod ``m`` is not ``r``; a null value: ``keep_null``."""
    return lambda k, v: keep_null if v is None else num(v) % m != r


def add_to_value(a: int) -> Callable[[Any], Any]:
    return lambda v: None if v is None else str(num(v) + a)


def key_from_value(prefix: str, m: int) -> Callable[[Any, Any], Any]:
    """The new key ``prefix + value mod m``; a null value keeps its key."""
    return lambda k, v: k if v is None else f"{prefix}{num(v) % m}"


def map_(m: int, a: int) -> Callable[[Any, Any], tuple[Any, Any]]:
    key, value = key_from_value("k", m), add_to_value(a)
    return lambda k, v: (key(k, v), value(v))


def flat_map_values(n: int) -> Callable[[Any], list]:
    return lambda v: [] if v is None else [str(num(v) + i) for i in range(n)]


def flat_map(n: int, m: int) -> Callable[[Any, Any], list]:
    return lambda k, v: [] if v is None else [(f"k{(num(v) + i) % m}", str(num(v) + i)) for i in range(n)]


def total(aggregate: str, v: str) -> str:
    """Sums decimal strings (a reducer)."""
    return str(num(aggregate) + num(v))


def difference(aggregate: str, v: str) -> str:
    """The subtractor for :func:`total`."""
    return str(num(aggregate) - num(v))


def zero() -> str:
    return "0"


def append(k: Any, v: str, aggregate: str) -> str:
    """Appends ``"+" + value``: order-sensitive, so any difference in fold order shows."""
    return f"{aggregate}+{v}"


def append_removal(k: Any, v: str, aggregate: str) -> str:
    """The subtractor for :func:`append` in table aggregations."""
    return f"{aggregate}-{v}"


def merge_sessions(k: Any, left: str, right: str) -> str:
    """Joins two session aggregates with ``"|"``, left first."""
    return f"{left}|{right}"


def tagged(tag: str) -> Callable[[Any, str, str], str]:
    """Appends ``tag + value``: each input of a cogroup folds with its own tag."""
    return lambda k, v, aggregate: f"{aggregate}{tag}{v}"


def key_text(key: Any) -> Any:
    """A windowed key as ``key@start/end``, a plain key as itself."""
    if hasattr(key, "window_start"):
        return f"{key.key}@{key.window_start}/{key.window_end}"
    return key


def letter_key(m: int) -> Callable[[Any, Any], Any]:
    """The key ``"a"`` + value mod ``m`` (a letter, the domain input keys are drawn from, so a
    re-keyed record still finds partners); a null value keeps its key."""
    return lambda k, v: k if v is None else chr(ord("a") + num(v) % m)


def regroup(m: int) -> Callable[[Any, Any], tuple[Any, Any]]:
    """A table's re-grouping: the row's value under the key ``"g"`` + value mod ``m``, or its own
    key for ``m`` 0 (Kafka calls it with non-null values only)."""
    return lambda k, v: (k if m == 0 else f"g{num(v) % m}", v)


def joined(left: Any, right: Any) -> str:
    """``left&right``, a missing side as ``-``: shows which side is which, and which is absent."""
    return f"{'-' if left is None else left}&{'-' if right is None else right}"


def contains(text: str, keep_null: bool) -> Callable[[Any, Any], bool]:
    """Keeps a record whose value contains ``text``; a null value: ``keep_null``. For values that
    are not numbers (joined ones)."""
    return lambda k, v: keep_null if v is None else text in v


def suffixed(text: str) -> Callable[[Any], Any]:
    return lambda v: None if v is None else v + text


class Summing(Processor):
    """A user processor (Kafka's Processor API): keeps the sum of each key's values in the store
    ``store`` (a null value deletes the key; a null key is not stored), forwards each record with
    the key's new sum as ``key=sum`` if ``forward_each``, and every ``interval_ms`` of stream time
    (0: never) forwards every entry of the store, in store order, stamped with the punctuation's
    time, then empties the store if ``clear``. ``fixed_key``: for ``process_values``, whose
    punctuation forwards nothing (Kafka's FixedKeyProcessor can only forward records it was given)
    but still clears."""

    def __init__(self, store: str, interval_ms: int, forward_each: bool, clear: bool, fixed_key: bool) -> None:
        self.store_name, self.interval_ms, self.forward_each, self.clear, self.fixed_key = store, interval_ms, forward_each, clear, fixed_key

    def init(self, context) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)
        if self.interval_ms > 0:
            context.schedule(self.interval_ms, PunctuationType.STREAM_TIME, self.punctuate)

    def process(self, record) -> None:
        if record.key is None:
            if self.forward_each:
                self.context.forward(record)
            return
        if record.value is None:
            self.store.delete(record.key)
            total_ = None
        else:
            before = self.store.get(record.key)
            total_ = str((0 if before is None else num(before)) + num(record.value))
            self.store.put(record.key, total_)
        if self.forward_each:
            self.context.forward(record.with_value(f"{record.key}={'-' if total_ is None else total_}"))

    def punctuate(self, timestamp: int) -> None:
        entries = list(self.store.all())
        if not self.fixed_key:
            for key, value in entries:
                self.context.forward(Record(key, value, timestamp))
        if self.clear:
            for key, _ in entries:
                self.store.delete(key)
