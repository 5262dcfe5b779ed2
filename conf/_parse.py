"""Parsing of setting values at the boundary (files, command lines, mappings).

Every error says the same three things, in one shape: the setting, what it allows, and the value
as it was given (``commit_interval_ms must be a positive number of milliseconds, got 'abc'``), so
a user fixes it without reading code. Values come as TOML types from files and as strings from
``--set key=value``: both are accepted wherever they mean the same.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from enum import Enum
from typing import Any

from deltastreams.conf.errors import ConfigError


def invalid(setting: str, allowed: str, value: Any) -> ConfigError:
    """The one shape of a bad value's error: ``<setting> must be <allowed>, got <value>``."""
    return ConfigError(f"{setting} must be {allowed}, got {value!r}", setting=setting)


def unknown_settings(unknown: list[str], known: list[str], kind: str = "settings") -> ConfigError:
    """Keys no setting has, each with the known one it most likely misspells."""
    guesses = [f"{key!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(key, known, n=1)) else repr(key) for key in unknown]
    return ConfigError(f"unknown setting(s) {', '.join(guesses)}; known {kind} are {known}", setting=unknown[0])


def enum_value(kind: type[Enum], value: Any, setting: str) -> Any:
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value).strip().lower())
    except ValueError:
        raise invalid(setting, "one of " + ", ".join(m.value for m in kind), value) from None


def boolean(value: Any, setting: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise invalid(setting, "true or false", value)


def integer(value: Any, setting: str, allowed: str = "an integer") -> int:
    """An int from an int, or a string of one (``--set key=5``, ``1_000``); floats and bools are
    refused. ``allowed`` says what the setting takes, for the error."""
    if isinstance(value, bool) or isinstance(value, float):
        raise invalid(setting, allowed, value)
    try:
        return int(str(value).strip().replace("_", ""))
    except ValueError:
        raise invalid(setting, allowed, value) from None


def milliseconds(value: Any, setting: str, allowed: str) -> float:
    """A duration in milliseconds: a number, or a string of one (fractions allowed: ``0.5``)."""
    if isinstance(value, bool):
        raise invalid(setting, allowed, value)
    try:
        return float(str(value).strip().replace("_", "")) if not isinstance(value, int | float) else float(value)
    except ValueError:
        raise invalid(setting, allowed, value) from None


def text(value: Any, setting: str, allowed: str = "a string") -> str:
    """A string setting: a number or a table where a name or path belongs is a mistake."""
    if not isinstance(value, str):
        raise invalid(setting, allowed, value)
    return value


def string_table(value: Any, setting: str, allowed: str) -> dict[str, str]:
    """A table of free-form string settings (``spark_conf``): values become strings."""
    if not isinstance(value, Mapping):
        raise invalid(setting, allowed, value)
    for key, item in value.items():
        if isinstance(item, Mapping | list | tuple) or item is None:
            raise invalid(f"{setting}.{key}", "a single value (a string, number or boolean)", item)
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def ms_value(duration) -> int | float:
    """A ``timedelta`` as the milliseconds a user gives at the boundary (``1500``, ``0.5``), for
    errors about a duration that came in as milliseconds."""
    ms = duration.total_seconds() * 1000
    return int(ms) if ms == int(ms) else ms
