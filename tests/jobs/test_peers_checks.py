"""How the peers benchmark finds which micro-batch read each event, compares counts, and feeds a
plain Delta table: what its Spark check relies on."""

import json

import pandas as pd
from deltalake import DeltaTable

from deltastreams.devtools.bench.peers.checks import _delta_batches, _kafka_batches, difference
from deltastreams.devtools.bench.peers.inputs import DeltaTableAppender, RecordingAppender, source_frame
from deltastreams.jobs.steady import SteadyGenerator


def test_kafka_end_offsets_place_every_event_in_the_batch_that_read_it():
    events = pd.DataFrame({"partition": [0, 0, 0, 1, 1], "offset": [0, 1, 2, 0, 1]})
    # As Spark's progress reports them: a JSON string per batch, partitions that have not been
    # read yet missing; a batch without data repeats the previous end.
    batches = [
        {"batch_id": 0, "end_offset": json.dumps({"pageview-events": {"0": 2}})},
        {"batch_id": 1, "end_offset": json.dumps({"pageview-events": {"0": 2, "1": 1}})},
        {"batch_id": 2, "end_offset": json.dumps({"pageview-events": {"0": 2, "1": 1}})},
        {"batch_id": 3, "end_offset": {"pageview-events": {"0": 3, "1": 2}}},
    ]
    assert list(_kafka_batches(events, batches)) == [0, 0, 3, 1, 3]


def test_delta_offsets_count_a_version_read_once_its_file_is():
    events = pd.DataFrame({"append": [0, 0, 1, 2, 3, 4, 5]})
    batches = [
        {"batch_id": 0, "end_offset": {"reservoirVersion": 1, "index": 0}},  # version 1's one file read
        {"batch_id": 1, "end_offset": json.dumps({"reservoirVersion": 3, "index": -1})},  # versions before 3
        {"batch_id": 2, "end_offset": {"reservoirVersion": 4, "index": 0}},
    ]
    assert list(_delta_batches(events, batches)) == [0, 0, 0, 1, 2, 2, -1]  # version 5: not read yet


def test_difference_counts_missing_extra_and_other_windows():
    expected = pd.DataFrame({"category": ["a", "a", "b"], "window_start": [0, 5000, 0], "count": [3, 2, 1]})
    actual = pd.DataFrame({"category": ["a", "a", "c"], "window_start": [0, 5000, 0], "count": [3, 4, 1]})
    assert difference(expected, actual) == {"windows_differing": 3, "missing": 1, "extra": 1, "other_count": 1, "records_more": 2}
    assert difference(expected, expected)["windows_differing"] == 0


def test_a_steady_stream_into_a_plain_table_is_one_file_per_version_recorded_as_appended(tmp_path):
    table = tmp_path / "input"
    recorder = RecordingAppender(DeltaTableAppender(table))
    progress = SteadyGenerator(recorder, 2000, duration_s=0.5).run()
    delta = DeltaTable(str(table))
    assert delta.version() == progress.appends  # version 0 is the empty creation
    for version in range(1, progress.appends + 1):
        log = (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
        assert sum('"add"' in line for line in log) == 1
    frame = recorder.frame(first_append=1)
    rows = delta.to_pyarrow_dataset().to_table(use_threads=False).to_pandas()
    assert len(frame) == len(rows) == progress.events == 1000
    assert sorted(frame["timestamp"]) == sorted(rows["timestamp"])
    assert frame["append"].min() == 1 and frame["append"].max() == progress.appends


def test_the_source_frame_places_events_as_kafkas_partitioner_and_dense_offsets_do():
    frame = source_frame(1000)
    for _, part in frame.groupby("partition"):
        assert list(part["offset"]) == list(range(len(part)))
    assert set(frame["partition"]) == {0, 1} and frame["append"].max() == 0
