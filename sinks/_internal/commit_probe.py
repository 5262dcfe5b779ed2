"""Whether a root's store keeps exclusive commits exclusive: the start-up check of exactly_once on
an object store.

Fencing (the transaction log's epochs) and offset assignment depend on a Delta commit failing
when its version already exists. On an object store delta-rs gets that from the store: it writes
``_delta_log/<version>.json`` with ``If-None-Match: *``, and a store that ignores the header lets
a second writer silently overwrite the first's commit. The probe writes that object twice: two
handles of a fresh probe table, both loaded at version 0, each commit version 1 with retries off.
Exactly one may succeed.

Why through delta-rs rather than a raw conditional PUT: it tests the very client-and-store pair
fencing relies on (a delta-rs that stopped sending the header would be caught too), and needs no
S3 client of its own (pyarrow's S3 filesystem cannot send conditional headers; boto3 is not a
dependency). Cost: a table creation and two commits, ~0.1 s on SeaweedFS, once per start.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
from deltalake import CommitProperties
from deltalake.exceptions import CommitFailedError

from deltastreams.conf.errors import ConfigError
from deltastreams.sinks._internal.files import filesystem_for, under_root
from deltastreams.sinks._internal.storage import create_table, open_table

PROBE_DIR = "_deltastreams_probes"
_SCHEMA = pa.schema([("probe", pa.int64())])


def _commit(table) -> None:
    table.create_write_transaction([], mode="append", schema=_SCHEMA, commit_properties=CommitProperties(max_commit_retries=0))


def conditional_overwrite_rejected(root: str) -> bool:
    """Whether the store under ``root`` rejected the second of two commits of the same version."""
    uri = under_root(root, PROBE_DIR, uuid.uuid4().hex)
    try:
        create_table(uri, _SCHEMA, name="deltastreams commit probe")
        first, second = open_table(uri), open_table(uri)
        _commit(first)
        try:
            _commit(second)
        except CommitFailedError:
            return True
        return False
    finally:
        fs, path = filesystem_for(uri)
        try:
            fs.delete_dir(path)
        except (FileNotFoundError, OSError):
            pass  # a leftover probe table harms nothing


def require_exclusive_commits(root: str) -> None:
    """Refuse (ConfigError) a root whose store lets a commit overwrite another."""
    if not conditional_overwrite_rejected(root):
        raise ConfigError(
            f"the store of root {root} accepted two commits of the same Delta version (it ignores If-None-Match on "
            "_delta_log/<version>.json): commits there are not exclusive, so a fenced instance could overwrite the "
            "live one's decision. exactly_once refuses to run on it; use a store with conditional writes (S3, "
            "SeaweedFS, MinIO, ...) or processing_guarantee=at_least_once",
            setting="processing_guarantee",
        )
