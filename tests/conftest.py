"""Shared fixtures: one local SparkSession for the whole test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from deltastreams.conf import StreamsConfig
    from deltastreams.streams._internal.spark.session import spark_session

    session = spark_session(StreamsConfig.load({"application_id": "tests", "spark_conf": {"spark.sql.shuffle.partitions": "2"}}))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def oracle():
    """Kafka Streams' own TopologyTestDriver in a JVM (deltastreams.devtools.differential.oracle, built by
    bin/setup from jvm/), started once and shared."""
    from deltastreams.devtools.differential.oracle import KafkaStreamsOracle

    with KafkaStreamsOracle() as started:
        yield started
