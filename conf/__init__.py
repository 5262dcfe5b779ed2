"""Configuration of deltastreams applications: one frozen, validated object, defaults in
``defaults.toml``."""

from conf.config import BadRecordPolicy, DeltaSpark, Guarantee, StreamsConfig, TopologyUpgrade
from conf.retention import RetentionConfig

__all__ = ["BadRecordPolicy", "DeltaSpark", "Guarantee", "RetentionConfig", "StreamsConfig", "TopologyUpgrade"]
