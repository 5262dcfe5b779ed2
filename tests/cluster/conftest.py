"""One multi-host test cluster for the package (deltastreams.devtools.servers.netns_cluster): starting one costs about a
minute of JVM start-ups here. Skipped, with the reason, where network namespaces cannot be made."""

from __future__ import annotations

import pytest

from deltastreams.devtools.servers.netns_cluster import MultiHostCluster, NamespacesUnavailable, namespaces_unavailable


@pytest.fixture(scope="package")
def cluster(tmp_path_factory):
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(f"cannot create network namespaces here: {reason}")
    running = MultiHostCluster(tmp_path_factory.mktemp("hosts"), workers=3, worker_memory="1500m")
    try:
        running.up()  # removes whatever it created if it fails
    except NamespacesUnavailable as e:
        pytest.skip(f"cannot create network namespaces here: {e}")
    try:
        yield running
    finally:
        running.down()
        assert running.leftovers() == []
