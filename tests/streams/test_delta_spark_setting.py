"""delta_spark = auto | on | off: which settings the application's session gets (no Spark needed)."""

from __future__ import annotations

import pytest

from deltastreams.conf import DeltaSpark, StreamsConfig
from deltastreams.conf.errors import ConfigError
from deltastreams.streams._internal.spark import delta_spark


def test_the_setting_is_parsed_and_defaults_to_auto():
    assert StreamsConfig.load({"application_id": "a"}).delta_spark is DeltaSpark.AUTO
    assert StreamsConfig.load({"application_id": "a", "delta_spark": "off"}).delta_spark is DeltaSpark.OFF
    with pytest.raises(ConfigError, match=r"delta_spark must be one of auto, on, off, got 'yes'"):
        StreamsConfig.load({"application_id": "a", "delta_spark": "yes"})


def test_auto_loads_the_built_jars_and_keeps_what_was_submitted():
    assert delta_spark.jars(), "bin/setup builds jvm/spark/target/lib"
    settings = delta_spark.session_settings(DeltaSpark.AUTO, {"spark.jars": "/opt/mine.jar", "spark.sql.extensions": "my.Extension"})
    assert settings["spark.jars"].split(",") == ["/opt/mine.jar", *delta_spark.jars()]
    assert settings["spark.sql.extensions"] == f"my.Extension,{delta_spark.EXTENSION}"
    assert settings["spark.sql.catalog.spark_catalog"] == delta_spark.CATALOG


def test_off_or_already_given_adds_nothing():
    assert delta_spark.session_settings(DeltaSpark.OFF, {}) == {}
    assert delta_spark.session_settings(DeltaSpark.ON, {"spark.sql.extensions": delta_spark.EXTENSION}) == {}


def test_without_jars_auto_runs_without_delta_spark_and_on_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setattr(delta_spark, "JARS_DIR", tmp_path)  # a checkout where bin/setup never built them
    assert delta_spark.session_settings(DeltaSpark.AUTO, {}) == {}
    with pytest.raises(ConfigError, match=r"delta_spark = on, but delta-spark's jars are not built .* run bin/setup"):
        delta_spark.session_settings(DeltaSpark.ON, {})
