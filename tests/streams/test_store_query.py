"""Committed-state queries (deltastreams.streams.query) over a real Spark run: one application with
a key-value count, a pickled aggregate, a windowed count and a session count, run twice with input
appended in between. Answers are checked against the input (plain dicts), against older batches
(``as_of_batch``), and against the job's own RocksDB stores after each run, caught up by the job's
restore code (TaskStores), compared as DataFrames with chispa."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import StoreQueryError
from deltastreams.sinks import Topic, create_topic, end_offsets, open_table
from deltastreams.sinks.transaction import TransactionLog
from deltastreams.state import ChangelogPosition, TaskStores
from deltastreams.streams import SessionWindows, StreamsBuilder, TimeWindows
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.query import StoreKind, StoreQuery

pytestmark = pytest.mark.spark

APP = "queries"
WINDOW_MS = 1000
GAP_MS = 300
STORES = ("counts", "sums", "windowed", "sessions")


def build_topology():
    builder = StreamsBuilder()
    clicks = builder.stream("clicks", key_type=pa.string(), value_type=pa.int64()).group_by_key()
    clicks.count(name="counts")
    clicks.aggregate(lambda: 0, lambda key, value, total: total + value, name="sums")
    clicks.windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, 10**9)).count(name="windowed")
    clicks.windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP_MS, 10**9)).count(name="sessions")
    return builder.build()


def append_clicks(root, rng, start_ms, n):
    keys = [f"user-{rng.randrange(12):02d}" for _ in range(n)]
    values = [rng.randrange(100) for _ in range(n)]
    stamps = [start_ms + i * 37 for i in range(n)]  # ascending: sessions merge only forwards
    Topic.open(root, "clicks").append(pa.table({"key": keys, "value": pa.array(values, pa.int64()), "timestamp": pa.array(stamps, pa.int64())}))
    return list(zip(keys, values, stamps, strict=True))


def expected_state(records):
    counts, sums, windowed = Counter(), Counter(), Counter()
    stamps = defaultdict(list)
    for key, value, ts in records:
        counts[key] += 1
        sums[key] += value
        windowed[(key, ts // WINDOW_MS * WINDOW_MS)] += 1
        stamps[key].append(ts)
    sessions = {}
    for key, times in stamps.items():
        runs = [[times[0], times[0], 1]]
        for ts in times[1:]:
            if ts - runs[-1][1] <= GAP_MS:
                runs[-1][1], runs[-1][2] = ts, runs[-1][2] + 1
            else:
                runs.append([ts, ts, 1])
        sessions[key] = [tuple(r) for r in runs]
    return counts, sums, windowed, sessions


def job_store_entries(root: str, store: str) -> dict[bytes, bytes]:
    """The job's own RocksDB stores of ``store`` (every task), caught up with the committed
    changelog by the job's restore code, as one bytes map."""
    state_dir = Path(root) / "state"
    changelog = Topic.open(root, f"{APP}-{store}-changelog")
    table = open_table(changelog.uri)
    ends = end_offsets(table)
    entries = {}
    for task_dir in sorted((state_dir / APP).iterdir()):
        if not (task_dir / store).is_dir():
            continue
        partition = int(task_dir.name.split("_")[1])
        stores = TaskStores(str(state_dir), APP, task_dir.name)
        position = ChangelogPosition(changelog.uri, table.metadata().id, partition, ends.get(partition, 0))
        stores.prepare({store: position})
        entries.update(stores.stores[store].range(None, None))
        stores.close()
    return entries


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """Two runs of the application (a batch each); after each, what the queries and the job's stores say."""
    root = str(tmp_path_factory.mktemp("store-query"))
    create_topic(root, "clicks", partitions=2, key_type=pa.string(), value_type=pa.int64())
    rng = random.Random(27)
    config = StreamsConfig.load({"application_id": APP, "root": root, "commit_interval_ms": 100, "max_records_per_batch": 1000})
    records, after = [], []
    live = None
    for run in range(2):
        records += append_clicks(root, rng, 1_700_000_000_000 + len(records) * 37, 300)
        StreamsApp(build_topology(), config, spark=spark).run(until_caught_up=True, timeout_s=240)
        if live is None:  # kept across the second run: refreshed incrementally (the window index too)
            live = {"counts": StoreQuery(root, APP, "counts"), "windowed": StoreQuery(root, APP, "windowed")}
            live["windowed"].fetch("user-05")
        queries = {store: StoreQuery(root, APP, store, window_size_ms=WINDOW_MS if store == "windowed" else None) for store in STORES}
        after.append(
            {
                "records": list(records),
                "batches": {store: q.batch for store, q in queries.items()},
                "all": {store: q.all() for store, q in queries.items()},
                "raw": {store: q.raw() for store, q in queries.items()},
                "job": {store: job_store_entries(root, store) for store in STORES},
            }
        )
    return root, after, live


def test_get_range_and_all_answer_the_committed_counts_and_aggregates(runs):
    root, after, _ = runs
    counts, sums, _, _ = expected_state(after[-1]["records"])
    q, s = StoreQuery(root, APP, "counts"), StoreQuery(root, APP, "sums")
    assert q.kind is StoreKind.KEY_VALUE and q.key_type == pa.string()
    assert {k: q.get(k) for k in counts} == dict(counts)
    assert {k: s.get(k) for k in sums} == dict(sums)  # a pickled aggregate
    assert q.get("nobody") is None
    assert q.range("user-03", "user-06") == sorted((k, v) for k, v in counts.items() if "user-03" <= k <= "user-06")
    assert q.all() == sorted(counts.items())


def test_fetch_answers_windows_and_sessions(runs):
    root, after, _ = runs
    _, _, windowed, sessions = expected_state(after[-1]["records"])
    w, s = StoreQuery(root, APP, "windowed", window_size_ms=WINDOW_MS), StoreQuery(root, APP, "sessions")
    assert (w.kind, s.kind) == (StoreKind.WINDOW, StoreKind.SESSION)
    key = "user-05"
    starts = sorted(start for k, start in windowed if k == key)
    assert w.fetch(key) == [(start, windowed[(key, start)]) for start in starts]
    assert w.fetch(key, starts[1], starts[2]) == [(start, windowed[(key, start)]) for start in starts[1:3]]
    assert sorted(w.all()) == sorted((k, start, n) for (k, start), n in windowed.items())
    assert s.fetch(key) == sessions[key]
    first = sessions[key][0]
    assert s.fetch(key, first[0], first[1]) == [first]
    table = w.table(key)
    assert table.column_names == ["key", "window_start", "window_end", "value", "timestamp"]
    assert table.column("window_end").to_pylist() == [start + WINDOW_MS for start in starts]


def test_as_of_batch_returns_the_state_an_older_batch_committed(runs):
    root, after, _ = runs
    first = after[0]
    assert after[1]["batches"]["counts"] > first["batches"]["counts"]
    for store in STORES:
        older = StoreQuery(root, APP, store, as_of_batch=first["batches"][store])
        assert older.batch == first["batches"][store]
        assert older.all() == first["all"][store]
    assert StoreQuery(root, APP, "counts", as_of_batch=first["batches"]["counts"]).all() != after[1]["all"]["counts"]


def test_each_run_the_query_equals_the_jobs_own_stores(runs, spark):
    _, after, _ = runs

    def frame(side):  # one DataFrame of every run's stores: (run, store, key, value), bytes as hex
        rows = [(run, store, k.hex(), v.hex()) for run, state in enumerate(after) for store in STORES for k, v in state[side][store].items()]
        return spark.createDataFrame(rows, "run int, store string, key string, value string")

    assert all(state["raw"][store] for state in after for store in STORES)
    assert_df_equality(frame("raw"), frame("job"), ignore_row_order=True)


def test_a_kept_query_refreshes_to_the_last_committed_batch(runs):
    root, after, live = runs
    fresh = {store: StoreQuery(root, APP, store) for store in live}
    for store, query in live.items():
        assert query.all() == fresh[store].all() == after[-1]["all"][store]
        assert query.batch == fresh[store].batch == after[-1]["batches"][store]
    for key in ("user-05", "user-06"):
        assert live["windowed"].fetch(key) == fresh["windowed"].fetch(key) != []


def test_to_spark_is_the_same_snapshot(runs, spark):
    root, _, _ = runs
    q = StoreQuery(root, APP, "windowed", window_size_ms=WINDOW_MS)
    frame = q.to_spark(spark, "user-03")
    assert frame.columns == ["key", "window_start", "window_end", "value", "timestamp"]
    rows = sorted(tuple(r) for r in frame.collect())
    assert rows == sorted(tuple(r.values()) for r in q.table("user-03").to_pylist()) and rows


def test_the_query_command_prints_csv(runs, capsys):
    from deltastreams.jobs.query import main

    root, after, _ = runs
    _, _, windowed, _ = expected_state(after[-1]["records"])
    topology = "tests.streams.test_store_query:build_topology"  # gives the windows' size: window_end
    argv = ["--root", root, "--application-id", APP, "--topology", topology, "--store", "windowed", "--key", "user-02", "--from", "0", "--to", str(2**42)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "key,window_start,window_end,value,timestamp"
    rows = [line.split(",") for line in lines[1:]]
    assert [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows] == sorted(
        (k, s, s + WINDOW_MS, n) for (k, s), n in windowed.items() if k == "user-02"
    )
    assert f"as of batch {after[-1]['batches']['windowed']}" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"application_id": "nope", "store": "counts"}, r"no application 'nope' .* applications there: \['queries'\]"),
        ({"application_id": APP, "store": "nope"}, r"no store 'nope'; its stores: \['counts', 'sessions', 'sums', 'windowed'\]"),
        ({"application_id": APP, "store": "counts", "as_of_batch": 10**6}, r"batch 1000000 of sub-topology 0 is not committed: committed batches .* are 0\.\.\d+"),
    ],
)
def test_bad_input_names_what_is_there(runs, args, message):
    root, _, _ = runs
    with pytest.raises(StoreQueryError, match=message):
        StoreQuery(root, **args)


def test_wrong_key_types_and_methods_are_refused(runs):
    root, _, _ = runs
    with pytest.raises(StoreQueryError, match=r"key 7 \(int\) is not a key of store 'counts', whose keys are string"):
        StoreQuery(root, APP, "counts").get(7)
    with pytest.raises(StoreQueryError, match="'windowed' is a window store: it has fetch, all, not get"):
        StoreQuery(root, APP, "windowed").get("user-01")
    with pytest.raises(StoreQueryError, match="'counts' is a key-value store: it has get, range, all, not fetch"):
        StoreQuery(root, APP, "counts").fetch("user-01", 0, 10)


def test_an_application_without_a_committed_batch_says_so(tmp_path):
    create_topic(str(tmp_path), "clicks", partitions=1, key_type=pa.string(), value_type=pa.int64())
    TransactionLog(f"{tmp_path}/transactions/fresh/subtopology-0", "fresh/subtopology-0").register("instance-1")
    with pytest.raises(StoreQueryError, match=r"application 'fresh' has no store 'counts'; its stores: none committed yet \(run it first\)"):
        StoreQuery(str(tmp_path), "fresh", "counts")
