"""Parsing of setting values at the boundary (files, command lines), with errors naming the setting."""

from __future__ import annotations

from enum import Enum
from typing import Any

from deltastreams.conf.errors import ConfigError


def enum_value(kind: type[Enum], value: Any, setting: str) -> Any:
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value).lower())
    except ValueError:
        choices = ", ".join(m.value for m in kind)
        raise ConfigError(f"{setting} must be one of {choices}, got {value!r}", setting=setting) from None


def boolean(value: Any, setting: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"{setting} must be true or false, got {value!r}", setting=setting)


def integer(value: Any, setting: str) -> int:
    """An int from an int, or a string of one (``--set key=5``); floats and bools are refused."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ConfigError(f"{setting} must be an integer, got {value!r}", setting=setting)
    try:
        return int(str(value).strip().replace("_", ""))
    except ValueError:
        raise ConfigError(f"{setting} must be an integer, got {value!r}", setting=setting) from None
