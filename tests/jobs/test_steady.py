import json
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow.compute as pc
import pytest

from deltastreams.jobs.pageview import INPUT_TOPIC, generate_steady, input_topic
from deltastreams.jobs.steady import SteadyGenerator
from deltastreams.sinks import Topic


def test_steady_stream_appends_rate_times_duration_stamped_with_append_time(tmp_path):
    started_ms = time.time() * 1000
    progress = generate_steady(str(tmp_path), 2000, duration_s=1.0, late_fraction=0.2, max_lateness_ms=5000)
    ended_ms = time.time() * 1000
    assert progress.events == 2000 and progress.behind_events == 0
    assert 5 <= progress.appends <= 11  # one append per 100 ms tick
    topic = Topic.open(str(tmp_path), INPUT_TOPIC)
    records = topic.read()
    assert records.num_rows == 2000
    for p in range(topic.partitions):  # dense offsets per partition
        offsets = np.sort(records.filter(pc.equal(records["partition"], p))["offset"].to_numpy())
        assert list(offsets) == list(range(len(offsets)))
    stamps = records["timestamp"].to_numpy()
    assert stamps.max() <= ended_ms and stamps.min() >= started_ms - 5000
    assert 0.1 < (stamps < started_ms).mean() < 0.3  # about the late fraction lies in the past


def test_an_overrunning_append_makes_the_next_one_larger_instead_of_drifting(tmp_path):
    sizes = []

    def loaded_machine(progress):  # every append takes 350 ms, more than three ticks
        sizes.append(progress.events - sum(sizes))
        time.sleep(0.35)

    progress = SteadyGenerator(input_topic(str(tmp_path)), 1000, duration_s=1.5).run(on_append=loaded_machine)
    assert progress.events == 1500 and progress.behind_events == 0
    assert progress.appends <= 6  # fewer appends than the 15 ticks...
    assert max(sizes) >= 300  # ...each carrying the events of the ticks it missed
    assert sum(Topic.open(str(tmp_path), INPUT_TOPIC).end_offsets().values()) == 1500


def test_stop_ends_an_unbounded_stream_after_the_append_in_progress(tmp_path):
    generator = SteadyGenerator(input_topic(str(tmp_path)), 1000)
    threading.Timer(0.6, generator.stop).start()
    progress = generator.run()
    assert progress.events > 0 and progress.seconds < 5
    assert progress.events + progress.behind_events == pytest.approx(1000 * progress.seconds, abs=2)  # due = appended + behind
    assert sum(Topic.open(str(tmp_path), INPUT_TOPIC).end_offsets().values()) == progress.events


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "generate takes --events N"),
        (["--events", "10", "--rate", "10"], "generate takes --events N"),
        (["--events", "10", "--duration-s", "5"], "--duration-s, --status-file and --log-retention-ms go with --rate"),
    ],
)
def test_generate_takes_either_events_or_rate(tmp_path, args, message):
    out = subprocess.run([sys.executable, "-m", "deltastreams.jobs.pageview", "generate", "--root", str(tmp_path), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and message in out.stderr


def test_generate_with_rate_stops_on_sigterm_and_reports_what_it_appended(tmp_path):
    status = tmp_path / "status.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "deltastreams.jobs.pageview", "generate", "--root", str(tmp_path / "root"), "--rate", "1000", "--status-file", str(status)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0
    assert "events/s (target 1,000)" in stderr
    final = json.loads(status.read_text())
    assert final["finished"] is True and final["events"] > 0
    assert sum(Topic.open(str(tmp_path / "root"), INPUT_TOPIC).end_offsets().values()) == final["events"]
