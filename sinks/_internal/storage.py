"""Where storage options become something a library takes: delta-rs' ``storage_options`` for
every Delta table this project opens or creates, and pyarrow's ``S3FileSystem`` for the data
files tasks write and read (:func:`deltastreams.sinks._internal.files.filesystem_for`).

The options are the process's, set once per process with :func:`use_storage_options`: by the
application at start (from ``StreamsConfig.storage_options``) and by every task from the settings
shipped in its plan (``BatchSettings.storage_options``), since executors are other processes,
possibly on other machines. A process that never sets them (a tool reading a table) uses the
AWS environment variables, as :mod:`deltastreams.conf.storage` reads them. A module-level setting rather
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

from deltastreams.conf._parse import boolean
from deltastreams.conf.errors import ConfigError
from deltastreams.conf.storage import storage_options_from

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
    # Delayed open: a small file becomes one PUT at close instead of a multipart upload opened
    # first (measured on SeaweedFS: 20 -> 6 ms per Arrow file); errors then surface at close,
    # which every writer here waits for before the file is named in a commit.
    return pafs.S3FileSystem(allow_delayed_open=True, **kwargs)


_STORE_ERRORS = (
    (("SIGNATURE_DOES_NOT_MATCH", "INVALID_ACCESS_KEY_ID", "ACCESS_DENIED"), "the store refused the credentials: check "
     "storage_options.AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the AWS_* environment variables)"),
    (("NETWORK_CONNECTION", "Could not connect", "Couldn't resolve"), "nothing answers at the endpoint: check storage_options.AWS_ENDPOINT_URL "
     "and that the store is running"),
)


def require_reachable(root: str) -> None:
    """Fail with a ConfigError that says what to fix when an object-store root cannot be used
    (no such bucket, refused credentials, no store at the endpoint), before anything else meets
    the store's error deep inside delta-rs or a Spark task. Local roots pass."""
    if not is_object_store(root):
        return
    fs, path = object_store_filesystem(root)
    bucket = path.split("/", 1)[0]
    endpoint = current_storage_options().get("AWS_ENDPOINT_URL", "the default AWS endpoint")
    try:
        found = fs.get_file_info(bucket).type != pafs.FileType.NotFound
        if found:
            fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError as e:
        advice = next((fix for signs, fix in _STORE_ERRORS if any(sign in str(e) for sign in signs)), "check storage_options")
        raise ConfigError(f"cannot use the root {root} at {endpoint}: {advice} ({str(e).splitlines()[0][:300]})", setting="storage_options") from None
    if not found:
        raise ConfigError(f"the root {root} is in bucket {bucket!r}, which does not exist at {endpoint}: create it, or fix the root", setting="root")
