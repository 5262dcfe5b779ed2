"""A typed store's purge by time (through its batch time index) against a plain model: random puts,
re-puts, deletes and purges, with commits and aborted batches between them, leave the same
entries as a purge that scans every entry would, and return the keys it deleted, oldest first."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from deltastreams.conf.errors import ProcessingError
from deltastreams.state import ChangeLoggingStore, InMemoryKeyValueStore
from deltastreams.streams._internal.processing.batch_stores import BatchKeyValueStore


@pytest.mark.parametrize("seed", range(6))
def test_purge_deletes_what_a_full_scan_would(seed):
    rng = random.Random(seed)
    logged = ChangeLoggingStore(InMemoryKeyValueStore("s"))
    store = BatchKeyValueStore(logged, pa.string(), pa.int64(), "node")
    committed: dict[str, int] = {}
    model: dict[str, int] = {}
    for _ in range(300):
        op = rng.random()
        if op < 0.45:
            keys = [f"k{rng.randrange(30)}" for _ in range(rng.randrange(1, 6))]
            times = [None if rng.random() < 0.1 else rng.randrange(1000) for _ in keys]
            store.put_many(keys, times)
            for key, time in zip(keys, times, strict=True):
                if time is None:
                    model.pop(key, None)
                else:
                    model[key] = time
        elif op < 0.55:
            keys = [f"k{rng.randrange(30)}" for _ in range(rng.randrange(1, 4))]
            store.delete_many(keys)
            for key in keys:
                model.pop(key, None)
        elif op < 0.85:
            until = rng.randrange(1000)
            expected = sorted((time, key) for key, time in model.items() if time <= until)
            assert store.purge(until).to_pylist() == [key for _, key in expected]
            for _, key in expected:
                del model[key]
        elif op < 0.95:  # commit
            changes = logged.changelog()
            logged.abort()
            logged.restore(changes)
            committed = dict(model)
        else:  # the batch fails
            logged.abort()
            model = dict(committed)
        assert store.all().to_pylist() == [{"key": k, "value": v} for k, v in sorted(model.items())]


def test_purge_needs_times():
    store = BatchKeyValueStore(ChangeLoggingStore(InMemoryKeyValueStore("s")), pa.string(), pa.float64(), "node")
    with pytest.raises(ProcessingError, match="purge\\(\\) on store 's' needs int64 values"):
        store.purge(5)
