"""User functions held by topology nodes, in three kinds.

- Python callables ``(key, value) -> ...`` (a value-only callable where Kafka has a
  ``ValueMapper``): called once per record, anywhere.
- pyarrow compute expressions over the record's columns (``pc.field("value", "duration_s") >= 30``):
  vectorised over a whole batch by the engine-independent core, so they run on Spark executors and
  in the TopologyTestDriver alike. The fast path.
- Spark Column expressions (``F.col("value.duration_s") >= 30``): compiled to Catalyst; they need
  the records inside the JVM, so the Spark runtime ships them there and back.

Expressions see the columns ``key``, ``value`` and ``timestamp``. Where Kafka takes a KeyValue
mapper (``map``), expressions come as a pair ``(key_expression, value_expression)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from conf.errors import TopologyError


class FunctionKind(Enum):
    PYTHON = "python"
    ARROW = "arrow"
    COLUMN = "column"


def is_column(obj: Any) -> bool:
    """A Spark Column, recognised without importing pyspark (the DSL must not need Spark)."""
    return any(c.__name__ == "Column" and c.__module__.startswith("pyspark") for c in type(obj).__mro__)


def is_arrow_expression(obj: Any) -> bool:
    import pyarrow.compute as pc

    return isinstance(obj, pc.Expression)


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without signatures
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


@dataclass(frozen=True)
class UserFunction:
    """A node's function. ``fn`` is the callable, a Column, or a tuple of Columns (key, value)."""

    fn: Any
    kind: FunctionKind
    takes_key: bool = True
    """False for a value-only callable (Kafka's ValueMapper)."""

    @property
    def is_column(self) -> bool:
        return self.kind is FunctionKind.COLUMN

    @property
    def is_arrow(self) -> bool:
        return self.kind is FunctionKind.ARROW

    def describe(self) -> str:
        if self.kind is not FunctionKind.PYTHON:
            return repr(self.fn)
        return getattr(self.fn, "__qualname__", repr(self.fn))

    def __call__(self, key: Any, value: Any) -> Any:
        return self.fn(key, value) if self.takes_key else self.fn(value)


def user_function(
    obj: Any, *, operator: str, columns: int = 1, value_only_allowed: bool = False
) -> UserFunction:
    """Check a DSL argument at build time and wrap it.

    ``columns`` is how many Column expressions stand in for the callable (2 for ``map``: key and
    value)."""
    if columns == 1 and is_column(obj):
        return UserFunction(obj, FunctionKind.COLUMN)
    if columns == 1 and is_arrow_expression(obj):
        return UserFunction(obj, FunctionKind.ARROW)
    if columns == 2 and isinstance(obj, tuple) and len(obj) == 2:
        if all(is_column(c) for c in obj):
            return UserFunction(obj, FunctionKind.COLUMN)
        if all(is_arrow_expression(c) for c in obj):
            return UserFunction(obj, FunctionKind.ARROW)
    if not callable(obj):
        expected = "a callable (key, value) -> ..." + (
            ", or a pair (key, value) of pyarrow expressions or of Spark Columns"
            if columns == 2
            else ", a pyarrow compute expression or a Spark Column expression"
        )
        raise TopologyError(f"{operator}() takes {expected}, got {obj!r}", node=operator)
    arity = _positional_arity(obj)
    if arity is not None and arity not in (1, 2):
        raise TopologyError(
            f"{operator}() takes a function of (key, value), but {getattr(obj, '__qualname__', obj)!r} "
            f"takes {arity} positional arguments",
            node=operator,
        )
    if arity == 1 and not value_only_allowed:
        raise TopologyError(
            f"{operator}() takes a function of (key, value), but {getattr(obj, '__qualname__', obj)!r} takes one",
            node=operator,
        )
    return UserFunction(obj, FunctionKind.PYTHON, takes_key=arity != 1)
