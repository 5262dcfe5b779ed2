import json

import pytest

from deltastreams.devtools.bench import suite as bench

pytestmark = pytest.mark.spark


def test_benchmark_runs_end_to_end_and_writes_its_report(spark, tmp_path):
    assert bench.main(["--smoke", "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]) == 0
    (run,) = (tmp_path / "out").iterdir()
    results = json.loads((run / "results.json").read_text())
    for key in ("exactly_once@1000", "at_least_once@1000", "spark_structured_streaming@1000", "pyarrow"):
        assert results["events_per_s"][key] > 0, key
    assert results["eos_equals_alos"]["1000"] is True
    latency = results["latency_ms"]["exactly_once@1000"]
    assert latency["records"] > 0 and 0 < latency["p50"] <= latency["p99"]
    assert results["restore"]["keys"] == 2000 and results["peak_memory_mb"] > 0
    assert (run / "summary.md").read_text().startswith("# Benchmark")
    assert (run / "throughput.png").stat().st_size > 0
