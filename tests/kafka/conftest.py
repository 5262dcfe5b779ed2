"""Apache Kafka (:mod:`deltastreams.devtools.servers.kafka_broker`: KRaft, one node, from the jars bin/setup builds) for
the Kafka tests: started once per test session on free loopback ports, stopped afterwards; a test
whose topic names are fixed gets a fresh one. The tests are skipped, with the reason, only where
the broker cannot start (no JVM artifacts: run bin/setup)."""

from __future__ import annotations

import itertools

import pytest

from deltastreams.devtools.servers.kafka_broker import BrokerUnavailable, KafkaBroker

_names = itertools.count()


def _running_broker():
    try:
        started = KafkaBroker.start()
    except BrokerUnavailable as e:
        pytest.skip(f"no Kafka broker here: {e}")
    yield started
    started.stop()


broker = pytest.fixture(scope="session", name="broker")(_running_broker)
fresh_broker = pytest.fixture(name="fresh_broker")(_running_broker)
"""A broker of its own, for a test whose topic names are fixed (the pageview job's)."""


@pytest.fixture
def topic_name():
    """A fresh topic name per test (the broker is shared by the session)."""
    return f"t{next(_names)}"
