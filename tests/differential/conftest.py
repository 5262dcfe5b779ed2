"""Kafka Streams' own TopologyTestDriver (a JVM built by bin/setup from jvm/), started once per
test session and shared: the differential tests run scenarios through it and through ours."""

from __future__ import annotations

import pytest

from jobs.differential.oracle import KafkaStreamsOracle


@pytest.fixture(scope="session")
def oracle():
    with KafkaStreamsOracle() as started:
        yield started
