"""KafkaConfig: which topics live in Kafka instead of (or besides) Delta, and how to reach and
decode them (``[kafka]`` in ``defaults.toml``; ``--set kafka.<key>=<value>`` on the command line).

The topology names topics, as in Kafka Streams; where a topic lives is configuration: the topics
in ``source_topics`` are read from the Kafka cluster at ``bootstrap_servers`` (same name there),
every other topic is a Delta table under the root. Topics in ``sink_topics`` are written to the
root as usual and each committed batch of them is also published to Kafka, exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deltastreams.conf._parse import integer, invalid, text, unknown_settings
from deltastreams.conf.errors import ConfigError

PREFIX = "kafka."
CLIENT_PREFIX = "client."
FORMATS = ("bytes", "string", "json", "long", "int")
STARTING_OFFSETS = ("earliest", "latest")
ON_MISSING_OFFSETS = ("fail", "earliest")


@dataclass(frozen=True, kw_only=True)
class KafkaConfig:
    bootstrap_servers: str = ""
    """``host:port[,host:port]``; empty: no Kafka."""
    source_topics: tuple[str, ...] = ()
    """Topics read from Kafka."""
    sink_topics: tuple[str, ...] = ()
    """Topics also published to Kafka, one Kafka transaction per committed batch."""
    key_format: str = "string"
    value_format: str = "string"
    """How keys and values are (de)serialized: bytes, string (UTF-8), json, long, int (Kafka's
    big-endian Long/IntegerSerializer). JSON decodes into the type a topology declares
    (``stream(topic, value_type=...)``)."""
    starting_offsets: str = "earliest"
    """Where a sub-topology starts reading a Kafka topic it has never read."""
    on_missing_offsets: str = "fail"
    """When the offsets to read next are gone (retention, a recreated topic): ``fail`` with a
    clear error, or resume from the ``earliest`` offset still there, logging the gap."""
    poll_interval_ms: int = 200
    """How often the driver asks the cluster for new offsets."""
    client: Mapping[str, str] = field(default_factory=dict)
    """More librdkafka settings (``kafka.client.security.protocol=SSL``, ...)."""

    def __post_init__(self) -> None:
        for what, value, choices in (
            ("key_format", self.key_format, FORMATS),
            ("value_format", self.value_format, FORMATS),
            ("starting_offsets", self.starting_offsets, STARTING_OFFSETS),
            ("on_missing_offsets", self.on_missing_offsets, ON_MISSING_OFFSETS),
        ):
            if value not in choices:
                raise invalid(PREFIX + what, "one of " + ", ".join(choices), value)
        if (self.source_topics or self.sink_topics) and not self.bootstrap_servers:
            raise ConfigError(
                f"{PREFIX}source_topics / sink_topics name Kafka topics, but {PREFIX}bootstrap_servers is empty: give the cluster's host:port",
                setting=PREFIX + "bootstrap_servers",
            )
        if self.poll_interval_ms <= 0:
            raise invalid(PREFIX + "poll_interval_ms", "a positive number of milliseconds", self.poll_interval_ms)

    @classmethod
    def from_boundary(cls, raw: Mapping[str, Any]) -> KafkaConfig:
        """From keys without the ``kafka.`` prefix; ``client.*`` keys go to librdkafka as they are."""
        known = {"bootstrap_servers", "source_topics", "sink_topics", "key_format", "value_format", "starting_offsets", "on_missing_offsets", "poll_interval_ms"}
        unknown = sorted(k for k in raw if k not in known and k != "client" and not k.startswith(CLIENT_PREFIX))
        if unknown:
            raise unknown_settings([PREFIX + k for k in unknown], [PREFIX + k for k in sorted(known)] + [f"{PREFIX}{CLIENT_PREFIX}*"], "Kafka settings")
        values: dict[str, Any] = {k: v for k, v in raw.items() if k in known}
        for name in ("source_topics", "sink_topics"):
            if name in values:
                values[name] = _topics(values[name], PREFIX + name)
        if "poll_interval_ms" in values:
            values["poll_interval_ms"] = integer(values["poll_interval_ms"], PREFIX + "poll_interval_ms", "a positive number of milliseconds")
        for name in ("bootstrap_servers", "key_format", "value_format", "starting_offsets", "on_missing_offsets"):
            if name in values:
                values[name] = text(values[name], PREFIX + name, "host:port[,host:port]" if name == "bootstrap_servers" else "a string").strip()
        client = raw.get("client", {})  # a [kafka.client] table in a file
        if not isinstance(client, Mapping):
            raise invalid(PREFIX + "client", "a table of librdkafka settings", client)
        values["client"] = {**{str(k): str(v) for k, v in client.items()}, **{k[len(CLIENT_PREFIX):]: str(v) for k, v in raw.items() if k.startswith(CLIENT_PREFIX)}}
        return cls(**values)


def _topics(value: Any, setting: str) -> tuple[str, ...]:
    """A list, or a comma-separated string (``--set kafka.source_topics=a,b``)."""
    if not isinstance(value, str | list | tuple):
        raise invalid(setting, "a list of topic names (or a comma-separated string)", value)
    items = value.split(",") if isinstance(value, str) else value
    return tuple(str(t).strip() for t in items if str(t).strip())
