import json

from deltastreams.streams._internal.runtime.progress import Progress
from deltastreams.streams._internal.spark.trigger import BatchMetrics


def _metrics(batch_id, subtopology=0):
    return BatchMetrics(
        subtopology=subtopology,
        batch_id=batch_id,
        tasks=2,
        records_in=500,
        records_out=40,
        dropped_late=3,
        dead_letters=1,
        restored_entries=0,
        process_seconds=0.25,
        commit_seconds=0.125,
        total_seconds=0.4,
        phases={"plan": 0.01, "tasks": 0.24},
        task_phases={"process": 0.1},
        started_at=1_800_000_000.0,
    )


def test_metrics_file_gets_one_json_line_per_committed_batch(tmp_path):
    path = tmp_path / "metrics.jsonl"
    progress = Progress()
    progress.write_metrics_to(str(path))
    progress.batch_done(_metrics(7))
    progress.batch_done(_metrics(3, subtopology=1))
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first == {
        "time": 1_800_000_000.4,  # the batch's end
        "subtopology": 0,
        "batch_id": 7,
        "tasks": 2,
        "records_in": 500,
        "records_out": 40,
        "dropped_late": 3,
        "dead_letters": 1,
        "restored_entries": 0,
        "total_ms": 400.0,
        "process_ms": 250.0,
        "commit_ms": 125.0,
        "phases": {"plan": 10.0, "tasks": 240.0},
        "task_phases": {"process": 100.0},
    }
    assert (second["subtopology"], second["batch_id"]) == (1, 3)
    assert progress.totals["batches"] == 2


def test_no_metrics_file_unless_asked(tmp_path):
    Progress().batch_done(_metrics(0))
    assert list(tmp_path.iterdir()) == []
