"""The user functions of the scenario catalogue, in Python: each family is spelled exactly as its
Java twin in ``jvm/src/main/java/deltastreams/oracle/Functions.java``, which Kafka Streams runs.
Values are decimal strings of small non-negative integers (or None); keys are short strings (or
None)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
