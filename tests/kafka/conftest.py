"""The Kafka tests use the session's one Apache Kafka broker (``broker``, ``fresh_broker`` and
``topic_name`` in tests/conftest.py)."""
