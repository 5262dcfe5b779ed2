"""The stream-stream join's array-at-a-time path (stream_join_batch) against its record-at-a-time
path, on seeded random batches: the same results (order, keys, values, timestamps, headers), the
same dead letters and dropped counts, and stores that hold the same entries after every commit
(the array path writes them once per batch, the record path as it goes).

The workloads aim at the corners: null keys and values, timestamps jumping back past the stores'
retention, ties in time and key, asymmetric and zero windows, a joiner that raises, waiting
records committed in one batch and emitted or joined in a later one, int keys, a self-join, values
from a Python step (some None), and a topology whose records carry walks (the joined stream and
one of its inputs into one topic). The two array steps with the most arithmetic (the range join,
the largest waiting time per position) are also checked against brute force."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from deltastreams.sinks.serde import HEADERS_TYPE
from deltastreams.state import ChangeLoggingStore, InMemoryKeyValueStore
from deltastreams.streams import JoinWindows, StreamsBuilder
from deltastreams.streams.core import TaskProcessor
from deltastreams.streams._internal.processing import stream_join_batch, stream_joins
from deltastreams.streams._internal.processing.join_closing import waiting_max
from deltastreams.streams._internal.processing.join_matching import window_matches


def joiner(key, left, right):
    if left == "boom" or right == "boom":
        raise ValueError("boom")
    return f"{key}:{left}+{right}"


def build(kind, windows, shape):
    builder = StreamsBuilder()
    left = builder.stream("left")
    right = left if shape == "self" else builder.stream("right")
    if shape == "mapped":  # values the join sees as Python objects, some None
        left = left.map_values(lambda v: None if v is not None and v.endswith("7") else v)
    joined = getattr(left, kind)(right, joiner, windows)
    joined.to("out")
    if shape == "walks":
        left.map_values(lambda v: f"copy {v}").to("out")
    return builder.build()


def workload(rng, int_keys):
    batches, base, offsets = [], 0, {"left": 0, "right": 0}
    for _ in range(rng.randrange(8, 30)):
        base = max(0, base + rng.choice([rng.randrange(-120, 0), rng.randrange(0, 60), rng.randrange(0, 400)]))
        tables = {}
        for topic in ("left", "right"):
            size = rng.choice([0, 1, rng.randrange(1, 40), rng.randrange(1, 40)])
            keys = [None if rng.random() < 0.05 else (rng.randrange(3) if int_keys else f"k{rng.randrange(3)}") for _ in range(size)]
            values = [None if rng.random() < 0.05 else ("boom" if rng.random() < 0.02 else f"{topic[0]}{offsets[topic] + i}") for i in range(size)]
            step = rng.choice([1, 10])  # coarse times: ties across keys
            stamps = sorted(base + rng.randrange(0, 90) // step * step for _ in range(size))
            if rng.random() < 0.3:
                rng.shuffle(stamps)  # disorder within a topic
            headers = [[{"key": "h", "value": f"{topic}{offsets[topic] + i}".encode()}] if rng.random() < 0.3 else None for i in range(size)]
            tables[topic] = pa.table(
                {
                    "partition": pa.array([0] * size, pa.int32()),
                    "offset": pa.array(range(offsets[topic], offsets[topic] + size), pa.int64()),
                    "timestamp": pa.array(stamps, pa.int64()),
                    "key": pa.array(keys, pa.int64() if int_keys else pa.string()),
                    "value": pa.array(values, pa.string()),
                    "headers": pa.array(headers, HEADERS_TYPE),
                }
            )
            offsets[topic] += size
        batches.append(tables)
    return batches


def run(topology, batches, shape, monkeypatch, *, records):
    with monkeypatch.context() as patch:
        if records:
            patch.setattr(stream_joins, "covers", lambda windows, sides, records: False)
        else:
            patch.setattr(stream_join_batch, "ARRAYS_FROM", 1)  # small batches too
            patch.setattr(stream_joins, "join_batch", _no_fallback(stream_joins.join_batch))
        sub = topology.subtopologies[0]
        stores = {name: ChangeLoggingStore(InMemoryKeyValueStore(name)) for name in sub.stores}
        task = TaskProcessor(topology, sub, 0, stores, caching=False)
        seen = []
        for tables in batches:
            inputs = {"left": tables["left"]} if shape == "self" else tables
            result = task.process(inputs)
            out = result.outputs.get("out")
            seen.append(
                (
                    None if out is None else out.to_pylist(),
                    result.dropped_records,
                    result.dead_letters.to_pylist(),
                    {name: sorted((entry.key, entry.value) for entry in result.changelogs[name] if entry.value is not None) for name in stores},
                )
            )
            for name, store in stores.items():
                store.abort()
                store.restore(result.changelogs[name])
            seen.append({name: list(store.inner.range()) for name, store in stores.items()})
        return seen


def _no_fallback(join_batch):
    def checked(*args, **kwargs):
        outputs = join_batch(*args, **kwargs)
        flows = args[0]
        assert outputs is not None or not any(len(f) for f in flows.values()), "the array path declined a batch it should take"
        return outputs

    return checked


WINDOWS = [
    JoinWindows.of_time_difference_and_grace(20, 15),
    JoinWindows.of_time_difference_and_grace(20, 15).after(35),
    JoinWindows.of_time_difference_and_grace(30, 0).before(5),
    JoinWindows.of_time_difference_with_no_grace(0),
    JoinWindows.of_time_difference_and_grace(0, 40).after(60),
]


@pytest.mark.parametrize("seed", range(12))
def test_array_path_matches_record_path(seed, monkeypatch):
    rng = random.Random(seed)
    kind = ["join", "left_join"][seed % 2]
    shape = ["plain", "mapped", "walks", "self"][seed % 4]
    windows = WINDOWS[seed // 2 % len(WINDOWS)]
    topology = build(kind, windows, shape)
    batches = workload(rng, int_keys=seed % 3 == 0)
    by_records = run(topology, batches, shape, monkeypatch, records=True)
    by_arrays = run(topology, batches, shape, monkeypatch, records=False)
    print(sum(len(step[0] or []) for step in by_records[::2]))
    if kind != "join" or windows.spec().retention_ms:  # (retention 0: the stores keep nothing)
        assert sum(len(step[0] or []) for step in by_records[::2]) > 20
    for step, (expected, actual) in enumerate(zip(by_records, by_arrays, strict=True)):
        if step % 2:
            assert actual == expected, f"stores differ after batch {step // 2}"
        else:
            assert actual[:3] == expected[:3], f"results differ in batch {step // 2}"
            assert actual[3] == expected[3], f"changelog puts differ in batch {step // 2}"


@pytest.mark.parametrize("huge_times", [False, True])
def test_window_matches_against_brute_force(huge_times):
    rng = np.random.default_rng(int(huge_times))
    base = 2**61 if huge_times else 0  # far apart times take the time-rank branch
    n, m = 300, 200
    entry_key, entry_pos = rng.integers(0, 6, n), rng.integers(-1, 250, n)
    entry_time = base + rng.integers(0, 60, n) * (2**55 if huge_times else 1)
    entry_seq = rng.permutation(n)
    query_key, query_pos = rng.integers(0, 7, m), np.sort(rng.integers(0, 250, m))
    time_from = base + rng.integers(-5, 60, m) * (2**55 if huge_times else 1)
    time_to = time_from + rng.integers(-3, 20, m) * (2**55 if huge_times else 1)
    expected = [
        (q, e)
        for q in range(m)
        for e in sorted(range(n), key=lambda e: (entry_time[e], entry_seq[e]))
        if entry_key[e] == query_key[q] and time_from[q] <= entry_time[e] <= time_to[q] and entry_pos[e] < query_pos[q]
    ]
    queries, entries = window_matches(query_key, query_pos, time_from, time_to, entry_key, entry_time, entry_seq, entry_pos)
    assert len(expected) > 50
    assert list(zip(queries.tolist(), entries.tolist(), strict=True)) == expected


def test_waiting_max_against_brute_force():
    rng = np.random.default_rng(3)
    n = 400
    item_pos = rng.integers(-1, n, 300)
    removed = np.where(rng.random(300) < 0.5, n, np.minimum(item_pos + 1 + rng.integers(0, 300, 300), n - 1))
    times = rng.integers(0, 10_000, 300)
    at = np.sort(rng.choice(n, 150, replace=False))
    alive = (item_pos[None, :] < at[:, None]) & (at[:, None] <= removed[None, :])
    expected = np.where(alive.any(axis=1), np.where(alive, times[None, :], -1).max(axis=1), np.iinfo(np.int64).min)
    assert (waiting_max(at, item_pos, removed, times, n) == expected).all()
