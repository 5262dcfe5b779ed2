"""Scenarios on the Spark runtime: the inputs appended to Delta topics in pieces cut at random
points, the application run until caught up after each piece (one micro-batch per piece, each its
own commit), and once, in the middle, a restart that also throws the local stores away, so they
are restored from their changelogs. Every topic has one partition, as in the test drivers.

The reference is Kafka Streams' output for the scenario: a scenario is only run here once its
test-driver verdict is "same" or "documented", so our test driver's output is Kafka's (or, for a
documented difference, Kafka's on the equivalent scenario) and serves as the reference. The
contract compared depends on what Kafka promises about batching:

- **record for record** where Kafka's record-at-a-time output is the contract: caching off (one
  revision per input record, exactly as Kafka emits), and emit-final or suppress(until window
  closes) in any mode (one final result per window, whatever the commits);
- **the same final result** elsewhere (and for foreign-key joins, whose responses arrive a
  trigger later, so that a left row changed meanwhile drops them as stale): with caching on, a commit forwards only the last revision per
  key (and window) of its batch, as Kafka's cache does at a flush, so the last record per (topic,
  key, window) must equal the reference's, with the same set of keys and windows (a delete as the
  last record counts as none: a session merged away within a commit is not forwarded); suppress with a
  time limit behind a cache is not compared: which revisions reach its buffer, and so what it
  emits and when, depends on when the cache flushes, in Kafka as here (a batch that brings a
  key's update and the stream time that frees the key's older buffered value emits the update;
  record by record, the older value goes out and the update waits).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from deltastreams.conf import StreamsConfig
from deltastreams.devtools.differential.ours import run_ours
from deltastreams.devtools.differential.scenarios import Scenario
from deltastreams.devtools.differential.shapes import SHAPES
from deltastreams.sinks import Topic, create_topic
from deltastreams.streams import StreamsBuilder
from deltastreams.streams.app import StreamsApp
from deltastreams.topology.records import HEADERS, headers_array, headers_of


@dataclass(frozen=True)
class BatchedRun:
    outputs: list[dict]
    pieces: int
    restarted_after: int
    """The piece after which the application restarted with empty local stores."""
    spark: object
    """The Spark session the runs used (started by the first run if none was given): pass it on."""


def contract(scenario: Scenario) -> str | None:
    """``record``, ``final``, or None where batching may change even the final result (see the
    module docstring)."""
    if scenario.shape == "stateless":
        return "record"  # nothing to cache
    if scenario.shape == "fk_join":
        # A response is joined a trigger after its subscription; a left row that changed in
        # between drops it as stale (Kafka's hash check): which revisions come out depends on
        # the batches, in Kafka (on when responses arrive) as here. The final table does not.
        return "final"
    p = scenario.params
    suppress = (p.get("suppress") or {}).get("until")
    if p.get("emit") == "final" or suppress == "window_close" or not scenario.caching:
        return "record"
    if suppress == "time_limit":
        return None
    return "final"


def cut(scenario: Scenario, rng: random.Random) -> list[list[dict]]:
    """Pieces of consecutive inputs of one topic each (so a batch takes them in the scenario's
    order), cut at random points besides."""
    pieces: list[list[dict]] = []
    for record in scenario.inputs:
        if not pieces or pieces[-1][-1]["topic"] != record["topic"] or rng.random() < 0.3:
            pieces.append([])
        pieces[-1].append(record)
    return pieces


def run_batched(scenario: Scenario, spark, rng: random.Random, workdir: str | None = None) -> BatchedRun:
    if any("advance_ms" in r for r in scenario.inputs):
        raise ValueError("wall-clock steps have no place on Spark, whose wall clock is real")
    shape = SHAPES[scenario.shape]
    builder = StreamsBuilder()
    shape.build(builder, scenario.params)
    topology = builder.build()
    root = Path(tempfile.mkdtemp(prefix="deltastreams-diff-", dir=workdir))
    try:
        headers = any(r.get("headers") for r in scenario.inputs)
        for topic in shape.inputs:
            create_topic(root, topic, partitions=1, key_type=pa.string(), value_type=pa.string(), headers=headers)
        config = StreamsConfig.load({
            "application_id": f"diff-{scenario.id}", "root": str(root), "state_dir": str(root / "state"),
            "caching": scenario.caching, "num_partitions": 1, "commit_interval_ms": 10, "retention": {"enabled": False},
        })  # fmt: skip
        pieces = cut(scenario, rng)
        restart_after = rng.randrange(len(pieces))
        for i, piece in enumerate(pieces):
            Topic.open(root, piece[0]["topic"]).append(_table(piece, headers))
            app = StreamsApp(topology, config, spark=spark)
            app.run(until_caught_up=True, timeout_s=120)
            spark = app.spark
            if i == restart_after:
                shutil.rmtree(root / "state", ignore_errors=True)
        outputs = [row for topic in shape.outputs for row in _read(root, topic)]
        return BatchedRun(outputs, len(pieces), restart_after, spark)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _table(records: list[dict], headers: bool) -> pa.Table:
    columns = {
        "partition": pa.array([0] * len(records), pa.int32()),  # null keys too: one partition
        "key": pa.array([r["key"] for r in records], pa.string()),
        "value": pa.array([r["value"] for r in records], pa.string()),
        "timestamp": pa.array([r["timestamp"] for r in records], pa.int64()),
    }
    if headers:
        columns[HEADERS] = headers_array([[(k, v.encode()) for k, v in r.get("headers") or []] for r in records])
    return pa.table(columns)


def _read(root: Path, topic: str) -> list[dict]:
    try:
        table = Topic.open(root, topic).read()
    except Exception:  # noqa: BLE001 - a sink topic nothing was ever written to does not exist
        return []
    table = table.sort_by([("offset", "ascending")])
    rows = []
    windowed = "window_start" in table.column_names
    header_lists = headers_of(table.column(HEADERS)) if HEADERS in table.column_names else [()] * table.num_rows
    for i, row in enumerate(table.select([c for c in table.column_names if c != HEADERS]).to_pylist()):
        out = {"topic": topic, "key": row["key"]}
        if windowed:
            out["window_start"], out["window_end"] = row["window_start"], row["window_end"]
        out["value"] = row["value"]
        out["timestamp"] = row["timestamp"]
        out["headers"] = [[k, v.decode(errors="replace") if v is not None else None] for k, v in header_lists[i]]
        rows.append(out)
    return rows


def compare(scenario: Scenario, batched: list[dict], reference: list[dict]) -> str | None:
    """What differs between the batched run and the reference under the scenario's contract, or None."""
    if contract(scenario) is None:
        raise ValueError(f"scenario {scenario.id} has no batching contract to compare")
    if contract(scenario) == "record":
        return None if batched == reference else _first_difference(batched, reference)
    ours, theirs = _latest(batched), _latest(reference)
    if ours == theirs:
        return None
    missing = sorted(set(theirs) - set(ours), key=str)[:3]
    extra = sorted(set(ours) - set(theirs), key=str)[:3]
    changed = [(k, ours[k], theirs[k]) for k in sorted(set(ours) & set(theirs), key=str) if ours[k] != theirs[k]][:3]
    return f"final results differ: missing {missing}, extra {extra}, changed (batched, reference) {changed}"


def _latest(rows: list[dict]) -> dict:
    """The last record per (topic, key, window); a last record that is a delete (a null value)
    counts as no record: a session merged away within one commit is never forwarded at all."""
    latest = {}
    for row in rows:
        latest[(row["topic"], row["key"], row.get("window_start"), row.get("window_end"))] = (row["value"], row["timestamp"])
    return {key: last for key, last in latest.items() if last[0] is not None}


def _first_difference(batched: list[dict], reference: list[dict]) -> str:
    i = next((i for i, (a, b) in enumerate(zip(batched, reference)) if a != b), min(len(batched), len(reference)))
    return (
        f"{len(batched)} records batched, {len(reference)} in the reference; first difference at {i}: "
        f"batched {batched[i] if i < len(batched) else '-'}, reference {reference[i] if i < len(reference) else '-'}"
    )


def reference_outputs(scenario: Scenario) -> list[dict]:
    return run_ours(scenario)["outputs"]
