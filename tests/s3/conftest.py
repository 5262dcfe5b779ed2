"""The object-store tests use the session's one S3-compatible server (``s3_server`` and ``s3_root``
in tests/conftest.py); this process reaches it with its options while each test runs."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def s3_options(s3_server):
    """This process reaches the server with its options (as an application sets them at start);
    afterwards back to the environment's."""
    from deltastreams.sinks import use_storage_options

    use_storage_options(s3_server.storage_options)
    yield s3_server.storage_options
    use_storage_options(None)
