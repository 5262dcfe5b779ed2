"""Waiting for what a Kafka broker does after a call returns."""

from __future__ import annotations

import time


def eventually(read, expected, timeout_s: float = 10.0):
    """``read()`` until it returns ``expected`` or the timeout passes; its last value. For a
    partition's stable end after a transaction's commit: ``commit_transaction`` returns once the
    coordinator has logged the decision, and the commit markers are written after that, so the
    end moves a moment later (CI once read the old end right after the commit)."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value
