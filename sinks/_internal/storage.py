"""Where storage options become something a library takes: delta-rs' ``storage_options`` for
every Delta table this project opens or creates, and pyarrow's ``S3FileSystem`` for the data
files tasks write and read (:func:`sinks._internal.files.filesystem_for`).

The options are the process's, set once per process with :func:`use_storage_options`: by the
application at start (from ``StreamsConfig.storage_options``) and by every task from the settings
shipped in its plan (``BatchSettings.storage_options``), since executors are other processes,
possibly on other machines. A process that never sets them (a tool reading a table) uses the
AWS environment variables, as :mod:`conf.storage` reads them. A module-level setting rather
than an argument through every file and table call: one application has one root, hence one
store, and the calls are many (topics, logs, retention, readers on executors).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from urllib.parse import urlparse

import pyarrow.fs as pafs
from deltalake import DeltaTable

from conf._parse import boolean
from conf.storage import storage_options_from

_OBJECT_STORE_SCHEMES = ("s3", "s3a")
_options: dict[str, str] | None = None


def use_storage_options(options: Mapping[str, str] | None) -> None:
    """The options every later table and file access of this process uses (None: the environment's)."""
    global _options
    _options = None if options is None else dict(options)


def current_storage_options() -> dict[str, str]:
    return dict(_options) if _options is not None else storage_options_from({}, os.environ)


def is_object_store(uri: str) -> bool:
    return urlparse(str(uri)).scheme in _OBJECT_STORE_SCHEMES


def delta_options(uri: str) -> dict[str, str] | None:
    """delta-rs' ``storage_options`` for a table at ``uri``: None for local paths."""
    return current_storage_options() if "://" in str(uri) and not str(uri).startswith("file://") else None


def open_table(uri: str, version: int | None = None) -> DeltaTable:
    return DeltaTable(uri, version=version, storage_options=delta_options(uri))


def table_exists(uri: str) -> bool:
    return DeltaTable.is_deltatable(uri, storage_options=delta_options(uri))


def create_table(uri: str, schema, **kwargs) -> DeltaTable:
    return DeltaTable.create(uri, schema, storage_options=delta_options(uri), **kwargs)


def object_store_filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's S3 filesystem for ``s3://bucket/path`` with the current options, and the path."""
    parsed = urlparse(uri)
    return _s3(tuple(sorted(current_storage_options().items()))), f"{parsed.netloc}{parsed.path}".rstrip("/")


@functools.lru_cache(maxsize=8)
def _s3(options: tuple[tuple[str, str], ...]) -> pafs.S3FileSystem:
    """One filesystem per set of options: creating one sets up an AWS SDK client."""
    given = dict(options)
    kwargs: dict = {}
    endpoint = given.get("AWS_ENDPOINT_URL") or given.get("AWS_ENDPOINT")
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = f"{parsed.netloc}{parsed.path}".rstrip("/")
        kwargs["scheme"] = parsed.scheme
    for option, argument in (
        ("AWS_REGION", "region"),
        ("AWS_ACCESS_KEY_ID", "access_key"),
        ("AWS_SECRET_ACCESS_KEY", "secret_key"),
        ("AWS_SESSION_TOKEN", "session_token"),
    ):
        if given.get(option):
            kwargs[argument] = given[option]
    if "AWS_VIRTUAL_HOSTED_STYLE_REQUEST" in given:
        kwargs["force_virtual_addressing"] = boolean(given["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"], "storage_options.AWS_VIRTUAL_HOSTED_STYLE_REQUEST")
    return pafs.S3FileSystem(**kwargs)
