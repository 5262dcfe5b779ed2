"""Configuration of deltastreams applications: one frozen, validated object, defaults in
``defaults.toml``."""

from conf.config import BadRecordPolicy, DeltaSpark, Guarantee, StreamsConfig
from conf.retention import RetentionConfig

__all__ = ["BadRecordPolicy", "DeltaSpark", "Guarantee", "RetentionConfig", "StreamsConfig"]
