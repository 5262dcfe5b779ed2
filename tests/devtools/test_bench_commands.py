"""Every benchmark command runs at its smallest useful size and prints its figures: a benchmark that
breaks fails here, not in the next session that needs it. Each test checks what the command
prints (a rate, a latency, a ratio, and the verdict a benchmark makes of its own run where it makes
one), never a speed: speed is for the benchmarks themselves.

Commands with their own processes (the job started as its user starts it) run as commands; the
others run their ``main`` in this process. Elsewhere: ``bench`` (tests/jobs/test_bench_smoke.py),
``bench.peers`` (tests/kafka/test_bench_peers_smoke.py), ``bench.cluster_locality``
(tests/cluster/test_sticky_tasks.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from deltastreams.devtools.bench import batch_processor, core, latency, live_operators, query, stream_join

NUMBER = r"[\d,]+(?:\.\d+)?"


def number(text: str) -> float:
    return float(text.replace(",", ""))


def command(module: str, *args: str, timeout_s: float = 600) -> str:
    """``python -m <module> <args>`` as a user types it; its stdout, after checking it succeeded."""
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{module} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_bench_core_prints_the_core_beside_its_baselines_with_the_same_revisions(capsys):
    assert core.main(["--records", "20000", "--batch", "5000"]) in (0, None)
    out = capsys.readouterr().out
    rates = dict(re.findall(rf"^\s+(.+?)\s+({NUMBER}) rec/s", out, re.M))
    assert {"pyarrow group-by (no order, no state)", "python loop, same semantics, no store", "core, rocksdb store, caching on"} <= set(rates), out
    assert all(number(r) > 0 for r in rates.values())
    # caching on emits fewer revisions than caching off, and each store kind the same ones
    revisions = {name: number(n) for name, n in re.findall(rf"^\s+(core, .+?)\s+{NUMBER} rec/s\s+\(({NUMBER}) revisions", out, re.M)}
    assert revisions["core, memory store, caching on"] == revisions["core, rocksdb store, caching on"] < revisions["core, rocksdb store, caching off"], out


def test_bench_stream_join_prints_rates_and_the_core_joins_every_pair_pandas_finds(capsys):
    assert stream_join.main(["--records", "4000", "--batch", "1000", "--keys", "200"]) in (0, None)
    out = capsys.readouterr().out
    pandas_pairs = number(re.search(rf"pandas merge.*\(({NUMBER}) pairs\)", out).group(1))
    inner = number(re.search(rf"core join, rocksdb stores\s+{NUMBER} rec/s\s+\(({NUMBER}) results", out).group(1))
    assert pandas_pairs > 0 and inner == pandas_pairs, out


def test_bench_batch_processor_prints_both_processors_and_they_agree_with_numpy(capsys):
    assert batch_processor.main(["--records", "4000", "--batch", "1000", "--reps", "1"]) in (0, None)
    out = capsys.readouterr().out
    unique, numpy_unique = re.search(rf"({NUMBER}) unique \(numpy: ({NUMBER})\)", out).groups()
    assert number(unique) == number(numpy_unique) > 0, out
    for name in ("per-record", "vectorised", "numpy baseline"):
        assert number(re.search(rf"{name}\s+({NUMBER}) records/s", out).group(1)) > 0, out
    assert re.search(rf"vectorised / per-record: {NUMBER}x", out), out


def test_bench_live_operators_prints_the_cost_built_and_kept_for_each_topology(capsys):
    assert live_operators.main(["--batches", "5", "--records", "50", "--reps", "1"]) in (0, None)
    out = capsys.readouterr().out
    lines = re.findall(rf"^(.+?): built every batch ({NUMBER}) ms, kept across batches ({NUMBER}) ms", out, re.M)
    assert [name for name, _, _ in lines] == ["dedup, Processor API", "dedup, BatchProcessor", "windowed count"], out
    assert all(number(built) > 0 and number(kept) > 0 for _, built, kept in lines)


def test_bench_query_prints_first_call_lookups_and_refresh(capsys, tmp_path):
    assert query.main(["--keys", "2000", "--lookups", "100", "--root", str(tmp_path / "store")]) in (0, None)
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):])
    assert report["lookups"] == 100
    assert 0 < report["lookup_p50_ms"] <= report["lookup_p99_ms"] <= report["lookup_max_ms"]
    assert report["refresh_after_1000_updates_s"] > 0


@pytest.mark.spark
def test_bench_latency_prints_latency_and_cadence_of_a_steady_stream(spark, capsys, tmp_path):
    assert latency.main(["--rate", "1000", "--interval-ms", "100", "--seconds", "4", "--root", str(tmp_path / "latency")]) == 0
    out = capsys.readouterr().out
    p50, p95, p99 = map(number, re.search(rf"latency p50 ({NUMBER}) ms, p95 ({NUMBER}) ms, p99 ({NUMBER}) ms", out).groups())
    assert 0 < p50 <= p95 <= p99, out
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["records"] > 0 and stats["cadence"]["commits"] > 1, out


def ratio_line(out: str, first: str, second: str) -> tuple[float, float, float]:
    """The summary line ``N events: <first> R1/s, <second> R2/s, ratio Xx``: R1, R2, X."""
    found = re.search(rf"events: {re.escape(first)} ({NUMBER})/s, {re.escape(second)} ({NUMBER})/s, ratio ({NUMBER})x", out)
    assert found, out
    first_rate, second_rate, ratio = map(number, found.groups())
    assert first_rate > 0 and second_rate > 0 and ratio == pytest.approx(first_rate / second_rate, rel=0.02), out
    return first_rate, second_rate, ratio


@pytest.mark.slow
def test_bench_process_prints_both_processes_and_their_ratio(tmp_path):
    out = command("deltastreams.devtools.bench.process", "--events", "3000", "--reps", "1", "--work-dir", str(tmp_path))
    ratio_line(out, "deltastreams", "plain Spark")


@pytest.mark.slow
def test_bench_memory_prints_the_peak_of_the_job_s_processes(tmp_path):
    from deltastreams.jobs import pageview

    root = str(tmp_path / "root")
    pageview.generate(root, 3000, batches=2)
    out = command("deltastreams.devtools.bench.memory", "--root", root, "--until-caught-up")
    peak, exit_code = re.search(rf"peak memory ({NUMBER}) MB \(process tree\), {NUMBER} s, exit code (-?\d+)", out).groups()
    assert number(peak) > 100 and exit_code == "0", out  # a JVM and a Python driver at least


@pytest.mark.slow
def test_bench_kafka_prints_both_sources_and_their_ratio(tmp_path):
    out = command("deltastreams.devtools.bench.kafka", "--events", "3000", "--reps", "1", "--work-dir", str(tmp_path))
    ratio_line(out, "Kafka -> Delta", "Delta -> Delta")
    cpu = dict(re.findall(rf"^\s+(kafka|delta): .*, CPU ({NUMBER}) s, of which the broker {NUMBER} s", out, re.M))
    brokers = dict(re.findall(rf"^\s+(kafka|delta): .*, of which the broker ({NUMBER}) s", out, re.M))
    assert set(cpu) == {"kafka", "delta"}, out
    assert 0 < number(brokers["kafka"]) < number(cpu["kafka"]) and number(cpu["delta"]) > 1, out  # a JVM's start alone takes over a CPU second


@pytest.mark.slow
def test_bench_s3_prints_local_against_object_store_for_both_workloads(tmp_path):
    out = command(
        "deltastreams.devtools.bench.s3", "--events", "2000", "--batches", "2", "--small-events", "400", "--small-batches", "4", "--reps", "1",
        "--work-dir", str(tmp_path),
    )
    runs = re.findall(rf"^\s+(throughput|small batches), (local|s3): process {NUMBER} s, processing {NUMBER} s \(({NUMBER}) events/s\), (\d+) batches", out, re.M)
    assert {(w, r) for w, r, _, _ in runs} == {("throughput", "local"), ("throughput", "s3"), ("small batches", "local"), ("small batches", "s3")}, out
    assert all(number(rate) > 0 and int(batches) > 0 for _, _, rate, batches in runs), out


@pytest.mark.spark
def test_bench_catalyst_reader_prints_both_readers_and_they_read_the_same_records(spark, capsys, tmp_path):
    from deltastreams.devtools.bench import catalyst_reader

    assert catalyst_reader.main(["--root", str(tmp_path / "root"), "--events", "3000", "--reps", "1"]) == 0
    out = capsys.readouterr().out
    counts = dict(re.findall(rf"^(python-source|delta-spark): ({NUMBER}) records after the filter", out, re.M))
    assert set(counts) == {"python-source", "delta-spark"} and counts["python-source"] == counts["delta-spark"] != "0", out
    assert len(re.findall(rf"^(?:python-source|delta-spark): best {NUMBER} s, median {NUMBER} s over 1 runs$", out, re.M)) == 2, out


def test_bench_appends_run_prints_a_row_per_bucket_with_the_checkpointing_appends_apart(capsys, tmp_path):
    from deltastreams.devtools.bench import appends

    # 10 appends a second for 18 s: version 100, the first checkpoint, falls in the second bucket
    # (the first holds at most 90), with room for a slow machine
    assert appends.main(["run", "--root", str(tmp_path), "--minutes", "0.3", "--bucket-minutes", "0.15", "--records", "20"]) in (0, 1)
    out = capsys.readouterr().out
    rows = re.findall(rf"^\s+(\d)\s+\S+\s+({NUMBER})\s+({NUMBER})(?:\s+{NUMBER}){{5}}\s+(\S+)\s+(\S+)\s+({NUMBER})\s+", out, re.M)
    assert [r[0] for r in rows] == ["0", "1"] and all(number(r[1]) > 0 and number(r[2]) > 0 for r in rows), out
    assert [r[3] != "-" for r in rows] == [False, True] and number(rows[1][5]) >= 100, out  # the bucket holding version 100 times its append
    report = json.loads((tmp_path / "appends-report.json").read_text())
    assert set(report["verdict"]) == {"appends", "checkpointing appends"} and report["verdict"]["checkpointing appends"]["first_p50_ms"] > 0, report
    assert len((tmp_path / "appends.jsonl").read_text().splitlines()) == sum(int(number(r[1])) for r in rows)
