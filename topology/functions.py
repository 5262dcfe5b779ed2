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

from deltastreams.conf.errors import TopologyError


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


@dataclass(frozen=True)
class _Arity:
    """How a callable can be called: ``low`` to ``high`` positional arguments (``high`` None:
    unbounded), and keyword-only arguments it requires (then positional calls never fit)."""

    low: int
    high: int | None
    required_keywords: tuple[str, ...] = ()

    def accepts(self, count: int) -> bool:
        return not self.required_keywords and self.low <= count and (self.high is None or count <= self.high)

    def __str__(self) -> str:
        if self.high == self.low:
            text = f"{self.low} positional argument{'' if self.low == 1 else 's'}"
        elif self.high is None:
            text = f"{self.low} or more positional arguments"
        else:
            text = f"{self.low} to {self.high} positional arguments"
        if self.required_keywords:
            text += f" and requires keyword arguments {', '.join(self.required_keywords)}"
        return text


def _arity(fn: Callable[..., Any]) -> _Arity | None:
    """None when Python cannot tell (built-in types such as ``str`` or ``int`` have no signature)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    low = sum(1 for p in positional if p.default is p.empty)
    high = None if any(p.kind is p.VAR_POSITIONAL for p in params) else len(positional)
    keywords = tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty)
    return _Arity(low, high, keywords)


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def check_callable(obj: Any, *, operator: str, what: str, arguments: int) -> Any:
    """Check at build time that ``obj`` can be called with ``arguments`` positional arguments
    (``what`` names them for the message, e.g. ``"reducer(aggregate, value)"``)."""
    if not callable(obj):
        raise TopologyError(f"{operator}() takes a callable {what}, got {obj!r}", node=operator)
    arity = _arity(obj)
    if arity is not None and not arity.accepts(arguments):
        raise TopologyError(
            f"{operator}() calls {what}, but {_name(obj)!r} takes {arity}", node=operator
        )
    return obj


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
        return _name(self.fn)


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
    return UserFunction(obj, FunctionKind.PYTHON, takes_key=_takes_key(obj, operator, value_only_allowed))


def _takes_key(fn: Callable[..., Any], operator: str, value_only_allowed: bool) -> bool:
    """Whether ``fn`` is called as ``fn(key, value)`` rather than ``fn(value)``.

    A function taking exactly one required argument is a value-only function (Kafka's
    ``ValueMapper``) where those are allowed. A callable whose signature Python cannot read
    (``str``, ``int``, ``dict``...) is taken as value-only where allowed and as ``(key, value)``
    elsewhere, since nothing better can be known before it runs.
    """
    arity = _arity(fn)
    if arity is None:
        return not value_only_allowed
    one, two = arity.accepts(1), arity.accepts(2)
    if value_only_allowed and one and (arity.low == 1 or not two):
        return False
    if two:
        return True
    expected = "(value) or (key, value)" if value_only_allowed else "(key, value)"
    raise TopologyError(
        f"{operator}() takes a function of {expected}, but {_name(fn)!r} takes {arity}",
        node=operator,
    )


def joiner_function(obj: Any, *, operator: str) -> UserFunction:
    """Kafka's ``ValueJoiner`` ``(value, other_value)`` or ``ValueJoinerWithKey`` ``(key,
    value, other_value)``, told apart by how many arguments the callable requires."""
    if not callable(obj):
        raise TopologyError(f"{operator}() takes a joiner (value, other_value) -> value, got {obj!r}", node=operator)
    arity = _arity(obj)
    if arity is None:
        return UserFunction(obj, FunctionKind.PYTHON, takes_key=False)
    two, three = arity.accepts(2), arity.accepts(3)
    if not (two or three):
        raise TopologyError(
            f"{operator}() calls its joiner as (value, other_value) or (key, value, other_value), but {_name(obj)!r} takes {arity}",
            node=operator,
        )
    return UserFunction(obj, FunctionKind.PYTHON, takes_key=three and (arity.low == 3 or not two))
