from datetime import timedelta

import pytest

from deltastreams.conf import RetentionConfig, StreamsConfig
from deltastreams.conf.errors import ConfigError


def test_defaults_keep_retention_on_with_kafkas_delays():
    retention = StreamsConfig.load({"application_id": "app"}).retention
    assert retention == RetentionConfig()
    assert retention.enabled
    assert retention.purge_interval == timedelta(seconds=30)  # Kafka Streams' repartition.purge.interval.ms
    assert retention.tombstone_retention == timedelta(days=1)  # Kafka's delete.retention.ms
    assert retention.sink_retention is None and retention.sink_retention_bytes is None


def test_dotted_keys_as_set_gives_them_override_single_retention_settings():
    config = StreamsConfig.load({"application_id": "app", "retention.purge_interval_ms": "250", "retention.enabled": "off"})
    assert config.retention.purge_interval == timedelta(milliseconds=250)
    assert not config.retention.enabled
    assert config.retention.compaction_min_files == 10  # the rest of the table keeps its defaults


def test_a_retention_table_in_a_file_overrides_keys_and_settings_override_the_file(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text("commit_interval_ms = 100\n[retention]\ncompaction_min_files = 3\nsink_retention_ms = 60000\n")
    config = StreamsConfig.load({"application_id": "app", "retention": {"compaction_min_files": 4}}, file=path)
    assert config.commit_interval_ms == 100  # flat keys still work
    assert config.retention.compaction_min_files == 4
    assert config.retention.sink_retention == timedelta(minutes=1)
    assert config.retention.removed_file_delay == timedelta(minutes=10)


def test_minus_one_turns_sink_retention_off():
    config = StreamsConfig.load({"application_id": "app", "retention.sink_retention_ms": 1000, "retention.sink_retention_bytes": -1})
    assert config.retention.sink_retention == timedelta(seconds=1)
    assert config.retention.sink_retention_bytes is None


def test_the_log_checkpoint_interval_is_deltas_default_unless_set():
    assert StreamsConfig.load({"application_id": "app"}).retention.log_checkpoint_interval is None
    assert StreamsConfig.load({"application_id": "app", "retention.log_checkpoint_interval": 20}).retention.log_checkpoint_interval == 20
    assert StreamsConfig.load({"application_id": "app", "retention.log_checkpoint_interval": -1}).retention.log_checkpoint_interval is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("retention.purge_interval_ms", 0, "retention.purge_interval_ms must be a positive number of milliseconds, got 0"),
        ("retention.compaction_min_files", 1, "retention.compaction_min_files must be at least 2"),
        ("retention.removed_file_delay_ms", -5, "retention.removed_file_delay_ms must be a number of milliseconds >= 0, got -5"),
        ("retention.sink_retention_bytes", 0, "positive or -1"),
        ("retention.log_keep_versions", "many", "retention.log_keep_versions must be an integer"),
        ("retention.log_checkpoint_interval", 0, r"retention.log_checkpoint_interval must be at least 1, or -1 for Delta's default \(100\), got 0"),
        ("retention.log_checkpoint_interval", "often", r"retention.log_checkpoint_interval must be an integer, or -1 for Delta's default \(100\)"),
        ("retention.enabled", "maybe", "retention.enabled must be true or false"),
        ("retention.purge_interval", 5, r"unknown setting\(s\) 'retention.purge_interval' \(did you mean 'retention.purge_interval_ms'\?\)"),
    ],
)
def test_bad_retention_settings_name_the_setting(key, value, message):
    with pytest.raises(ConfigError, match=message) as info:
        StreamsConfig.load({"application_id": "app", key: value})
    assert info.value.setting == key


def test_an_unknown_top_level_key_is_still_refused():
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) 'retentoin' \(did you mean 'retention'\?\)"):
        StreamsConfig.load({"application_id": "app", "retentoin": 1})
