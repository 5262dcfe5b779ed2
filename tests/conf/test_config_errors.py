"""Every setting, given a value it cannot take, is refused with one error that names the setting,
the value as given and what the setting allows (``<setting> must be <allowed>, got <value>``):
never a bare ``could not convert string to float``. The settings are enumerated from the config
classes, so a new setting without a clear error fails here."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from deltastreams.conf import RetentionConfig, StreamsConfig
from deltastreams.conf.errors import ConfigError
from deltastreams.conf.kafka import KafkaConfig
from deltastreams.conf.retention import BOUNDARY_KEYS

NOT_A_NUMBER = "abc"
NOT_A_STRING = 5
NOT_A_TABLE = "x"
NOT_A_LIST = 5

BAD_VALUES = {
    # numbers (durations, counts, ports)
    "commit_interval_ms": NOT_A_NUMBER,
    "idle_close_ms": "soon",
    "num_partitions": "three",
    "max_records_per_batch": "1e6",
    "single_task_records": "x",
    "num_standby_replicas": "1.5",
    "metrics_port": "http",
    # choices
    "processing_guarantee": "twice",
    "on_bad_record": "ignore",
    "delta_spark": "maybe",
    "topology_upgrade": "yes",
    # booleans
    "caching": "perhaps",
    "sticky_tasks": "2",
    # strings
    "application_id": "a b",
    "root": NOT_A_STRING,
    "state_dir": NOT_A_STRING,
    "master": NOT_A_STRING,
    "late_records_topic": NOT_A_STRING,
    "metrics_address": NOT_A_STRING,
    # tables
    "spark_conf": NOT_A_TABLE,
    "kafka.client": NOT_A_TABLE,
    # Kafka
    "kafka.bootstrap_servers": NOT_A_STRING,
    "kafka.source_topics": NOT_A_LIST,
    "kafka.sink_topics": NOT_A_LIST,
    "kafka.key_format": "xml",
    "kafka.value_format": "avro",
    "kafka.starting_offsets": "middle",
    "kafka.on_missing_offsets": "skip",
    "kafka.poll_interval_ms": "fast",
    # storage options: any key is an option; the ones deltastreams reads are checked
    "storage_options.AWS_ALLOW_HTTP": "maybe",
    "storage_options.AWS_ENDPOINT_URL": "localhost:9000",
}
RETENTION_BAD = {f"retention.{key}": ("sometimes" if key == "enabled" else "1m") for key in BOUNDARY_KEYS}
OUT_OF_RANGE = {
    "commit_interval_ms": 0,
    "idle_close_ms": 0,
    "num_partitions": -1,
    "max_records_per_batch": 0,
    "single_task_records": -1,
    "num_standby_replicas": -2,
    "metrics_port": 70000,
    "kafka.poll_interval_ms": 0,
    "retention.purge_interval_ms": 0,
    "retention.orphan_file_delay_ms": -5,
    "retention.compaction_min_files": 1,
    "retention.optimize_target_file_bytes": 0,
    "retention.sink_retention_ms": 0,
    "retention.sink_retention_bytes": 0,
    "retention.log_keep_versions": 0,
    "retention.log_checkpoint_interval": 0,
}


def _boundary_keys() -> set[str]:
    top = {f.name for f in fields(StreamsConfig)} - {"retention", "kafka", "storage_options", "commit_interval", "idle_close"}
    top |= {"commit_interval_ms", "idle_close_ms"}
    kafka = {f"kafka.{f.name}" for f in fields(KafkaConfig)}
    return top | kafka | {f"retention.{k}" for k in BOUNDARY_KEYS}


def test_every_setting_has_a_bad_value_here():
    """A setting added without an entry here is not known to give a clear error."""
    covered = set(BAD_VALUES) | set(RETENTION_BAD)
    assert _boundary_keys() - covered == set()
    assert {f.name for f in fields(RetentionConfig)}  # the retention keys come from the class itself


def _refused(key: str, value) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        StreamsConfig.load({"application_id": "app", key: value} if key != "application_id" else {key: value})
    return raised.value


@pytest.mark.parametrize(("key", "value"), sorted({**BAD_VALUES, **RETENTION_BAD}.items()))
def test_a_bad_value_names_the_setting_the_value_and_what_is_allowed(key, value):
    error = _refused(key, value)
    message = str(error)
    assert error.setting == key
    assert re.match(rf"^{re.escape(key)} must be .+, got {re.escape(repr(value))}$", message), message
    assert "could not convert" not in message and "invalid literal" not in message


@pytest.mark.parametrize(("key", "value"), sorted(OUT_OF_RANGE.items()))
def test_a_value_out_of_range_is_shown_as_given(key, value):
    """Durations are shown in the milliseconds the user gave, not as a timedelta."""
    error = _refused(key, value)
    assert error.setting == key
    assert str(error).startswith(f"{key} must be ") and str(error).endswith(f", got {value!r}"), str(error)


def test_a_misspelled_setting_is_refused_with_the_likely_one():
    error = _refused("comit_interval_ms", 5)
    assert error.setting == "comit_interval_ms"
    assert "'comit_interval_ms' (did you mean 'commit_interval_ms'?)" in str(error)


def test_good_values_of_each_kind_are_taken_as_strings_too():
    """``--set key=value`` gives strings: each kind converts them."""
    config = StreamsConfig.load(
        {
            "application_id": "app",
            "commit_interval_ms": "250",
            "num_partitions": "4",
            "caching": "off",
            "on_bad_record": "FAIL",
            "idle_close_ms": "-1",
            "spark_conf": {"spark.sql.shuffle.partitions": 2, "spark.ui.enabled": False},
            "retention.enabled": "false",
            "kafka.poll_interval_ms": "50",
        }
    )
    assert config.commit_interval_ms == 250 and config.num_partitions == 4 and config.caching is False
    assert config.on_bad_record.value == "fail" and config.idle_close is None
    assert config.spark_conf == {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}
    assert config.retention.enabled is False and config.kafka.poll_interval_ms == 50
