import random
from datetime import timedelta

from deltastreams.conf import StreamsConfig
from deltastreams.devtools.harness.crash import RETENTION_SETTINGS, job_command, random_kill_delay


def settings_of(command):
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--set"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_retention_on_passes_aggressive_settings_the_job_accepts():
    settings = settings_of(job_command("/tmp/x", "exactly_once", "revisions", 1000, retention="on"))
    assert set(settings) == {f"retention.{k}" for k in RETENTION_SETTINGS}
    retention = StreamsConfig.load({"application_id": "pageview", **settings}).retention
    assert retention.enabled and retention.compaction_interval == timedelta(seconds=1)
    assert retention.removed_file_delay == timedelta(days=1)  # the checks read every file ever committed


def test_retention_off_turns_it_off():
    settings = settings_of(job_command("/tmp/x", "exactly_once", "revisions", 1000))
    assert not StreamsConfig.load({"application_id": "pageview", **settings}).retention.enabled


def test_random_kills_come_within_a_runs_length_however_short_runs_are():
    rng = random.Random(1)
    quick = [random_kill_delay(rng, [1.4, 1.6, 30.0, 1.5]) for _ in range(200)]  # runs end in ~1.5 s
    assert 0 < min(quick) and max(quick) <= 1.6 and sum(d < 0.8 for d in quick) > 50  # the median, not the slow outlier
    assert all(0 < random_kill_delay(rng, []) <= 20.0 for _ in range(50))  # before any run ended by itself
