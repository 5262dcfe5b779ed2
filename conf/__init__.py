"""Configuration of deltastreams applications: one frozen, validated object, defaults in
``defaults.toml``."""

from conf.config import BadRecordPolicy, Guarantee, StreamsConfig
from conf.retention import RetentionConfig

__all__ = ["BadRecordPolicy", "Guarantee", "RetentionConfig", "StreamsConfig"]
