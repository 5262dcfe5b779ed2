from datetime import timedelta

from deltastreams.conf import StreamsConfig
from deltastreams.devtools.harness.crash import RETENTION_SETTINGS, job_command


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
