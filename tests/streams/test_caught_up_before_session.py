"""A run until caught up whose input the driver's own triggers consume before the embedded Spark
session is up ends there: the query is never started, and what it committed is what a run through
the query commits (twice in a row, so the second resumes from the first's positions). The
session's start is held back here (as a slow JVM would be) so the order is certain."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pyarrow as pa

import deltastreams.streams.app as app_module
from deltastreams.conf import StreamsConfig
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import StreamsApp


def topology():
    builder = StreamsBuilder()
    builder.stream("clicks").group_by_key().count(name="clicks-per-user").to_stream().to("counts")
    return builder.build()


def clicks(seed: int, n: int) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    return [(f"u{rng.randrange(20)}", "c", 1000 + i) for i in range(n)]


def append(root: str, records: list[tuple[str, str, int]]) -> None:
    Topic.open(root, "clicks").append(pa.table({
        "key": [k for k, _, _ in records], "value": [v for _, v, _ in records], "timestamp": pa.array([t for *_, t in records], pa.int64()),
    }))  # fmt: skip


def latest_counts(root: str) -> dict[str, int]:
    out = Topic.open(root, "counts").read().sort_by([("partition", "ascending"), ("offset", "ascending")])
    return dict(zip(out["key"].to_pylist(), out["value"].to_pylist(), strict=True))


def test_a_run_until_caught_up_ends_before_its_session_is_up_and_commits_what_the_query_would(tmp_path, monkeypatch):
    root = str(tmp_path)
    released, asked = threading.Event(), threading.Event()

    def session_held_back(config, *, log_file=None):
        asked.set()
        released.wait(30)
        raise RuntimeError("this session start was held back by the test")

    monkeypatch.setattr(app_module, "spark_session", session_held_back)
    # Embedded, as in a process of its own (a test worker may hold another test's session, which
    # the application would otherwise take as given).
    monkeypatch.setattr(app_module, "embedded_master", lambda config: "local[2]")
    create_topic(root, "clicks", partitions=2, key_type=pa.string(), value_type=pa.string())
    config = StreamsConfig.load({"application_id": "early", "root": root, "commit_interval_ms": 100, "max_records_per_batch": 300})
    first, second = clicks(1, 1000), clicks(2, 700)
    try:
        append(root, first)
        app = StreamsApp(topology(), config)
        app.run(until_caught_up=True, timeout_s=120)
        assert asked.is_set() and not released.is_set()  # the session was being started, and never came
        assert app.query is None and app.spark is None
        assert latest_counts(root) == Counter(k for k, _, _ in first)
        assert app.progress.summary().startswith("processed 1,000 records in ")

        append(root, second)
        again = StreamsApp(topology(), config)
        again.run(until_caught_up=True, timeout_s=120)
        assert again.query is None
        assert latest_counts(root) == Counter(k for k, _, _ in first + second)  # resumed where the first run stopped
    finally:
        released.set()
