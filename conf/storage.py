"""Storage options: how to reach an object-store root (``[storage_options]`` in a settings file,
``--set storage_options.<KEY>=<value>``, or the usual AWS environment variables).

Keys are delta-rs' (object_store's) option names, e.g. ``AWS_ENDPOINT_URL``, ``AWS_REGION``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ALLOW_HTTP``. They are case-insensitive
there and upper-cased here, so a setting and an environment variable of the same option are one
key. Settings win over the environment, key by key. What they become for delta-rs and for
pyarrow's S3 filesystem is decided in one place, :mod:`deltastreams.sinks._internal.storage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from deltastreams.conf._parse import boolean
from deltastreams.conf.errors import ConfigError

PREFIX = "storage_options."
ENVIRONMENT = ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ALLOW_HTTP")
"""Environment variables used where no setting gives the option."""


def storage_options_from(settings: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The options of ``settings`` (keys without the prefix) over those of ``environ``, validated."""
    options = {name: environ[name] for name in ENVIRONMENT if environ.get(name)}
    for key, value in settings.items():
        if isinstance(value, Mapping | list | tuple) or value is None:
            raise ConfigError(f"{PREFIX}{key} must be a single value, got {value!r}", setting=PREFIX + str(key))
        options[str(key).upper()] = str(value).lower() if isinstance(value, bool) else str(value)
    _check(options)
    return options


def _check(options: Mapping[str, str]) -> None:
    endpoint = options.get("AWS_ENDPOINT_URL")
    if endpoint is not None:
        parsed = urlparse(endpoint)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigError(
                f"{PREFIX}AWS_ENDPOINT_URL must be a URL like http://host:port, got {endpoint!r}", setting=PREFIX + "AWS_ENDPOINT_URL"
            )
        allowed = boolean(options.get("AWS_ALLOW_HTTP", "false"), PREFIX + "AWS_ALLOW_HTTP")
        if parsed.scheme == "http" and not allowed:
            # delta-rs would refuse later with a less helpful error.
            raise ConfigError(
                f"{PREFIX}AWS_ENDPOINT_URL is plain http ({endpoint}): set {PREFIX}AWS_ALLOW_HTTP=true to allow it",
                setting=PREFIX + "AWS_ALLOW_HTTP",
            )
    elif "AWS_ALLOW_HTTP" in options:
        boolean(options["AWS_ALLOW_HTTP"], PREFIX + "AWS_ALLOW_HTTP")
