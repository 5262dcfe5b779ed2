"""Configuration of deltastreams applications: one frozen, validated object, defaults in
``defaults.toml``."""

from conf.config import BadRecordPolicy, Guarantee, StreamsConfig

__all__ = ["BadRecordPolicy", "Guarantee", "StreamsConfig"]
