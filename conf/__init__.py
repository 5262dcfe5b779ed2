"""Configuration of deltastreams applications: one frozen, validated object, defaults in
``defaults.toml``."""

from deltastreams.conf.config import BadRecordPolicy, DeltaSpark, Guarantee, StreamsConfig, TopologyUpgrade
from deltastreams.conf.retention import RetentionConfig

__all__ = ["BadRecordPolicy", "DeltaSpark", "Guarantee", "RetentionConfig", "StreamsConfig", "TopologyUpgrade"]
