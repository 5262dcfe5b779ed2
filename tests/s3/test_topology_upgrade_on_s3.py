"""The committed topology is kept in the transaction logs on an object store as on a local disk
(docs/operations.md, "Upgrading a topology"), and an incompatible start is refused there."""

from __future__ import annotations

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.devtools.pageview_variants import build_variant
from deltastreams.jobs.pageview import APPLICATION_ID, build_topology
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog, log_property
from deltastreams.streams._internal.runtime.topology_guard import TOPOLOGY_PROPERTY, check_topology_upgrade
from deltastreams.streams.errors import TopologyUpgradeError


def test_the_recorded_topology_refuses_an_unnamed_filter_upstream_of_the_count_on_s3(s3_root):
    config = StreamsConfig.load({"application_id": APPLICATION_ID, "root": s3_root})
    records = check_topology_upgrade(build_topology(), config)  # a first start: nothing to compare with
    for sub, text in records.items():
        log = TransactionLog(f"{s3_root}/transactions/{APPLICATION_ID}/subtopology-{sub}", f"{APPLICATION_ID}/subtopology-{sub}")
        log.register("first")
        log.keep_with_next_decision({TOPOLOGY_PROPERTY: text})
        log.decide(DecidedBatch(0, log.epoch, {}))
        assert log_property(log.uri, TOPOLOGY_PROPERTY) == text
    assert check_topology_upgrade(build_topology(), config) == {}
    with pytest.raises(TopologyUpgradeError, match="store KSTREAM-AGGREGATE-STATE-STORE-0000000003 -> KSTREAM-AGGREGATE-STATE-STORE-0000000004"):
        check_topology_upgrade(build_variant(exclude_categories=["sports"]), config)
