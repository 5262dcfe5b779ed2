"""The [kafka] settings: from files, mappings and --set keys, with clear errors."""

from __future__ import annotations

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import ConfigError


def test_kafka_settings_come_from_a_file_a_mapping_and_dotted_keys(tmp_path):
    file = tmp_path / "app.toml"
    file.write_text('[kafka]\nbootstrap_servers = "h:9092"\nsource_topics = ["events"]\n[kafka.client]\n"security.protocol" = "PLAINTEXT"\n')
    config = StreamsConfig.load({"application_id": "a", "kafka.value_format": "json", "kafka.sink_topics": "out,more"}, file=file)
    kafka = config.kafka
    assert (kafka.bootstrap_servers, kafka.source_topics, kafka.sink_topics, kafka.value_format) == ("h:9092", ("events",), ("out", "more"), "json")
    assert kafka.client == {"security.protocol": "PLAINTEXT"}
    assert StreamsConfig.load({"application_id": "a"}).kafka.source_topics == ()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"kafka.source_topics": "events"}, "bootstrap_servers is empty"),
        ({"kafka.value_format": "avro"}, "value_format must be one of"),
        ({"kafka.on_missing_offsets": "skip"}, "on_missing_offsets must be one of"),
        ({"kafka.bootstrap": "h:1"}, "unknown setting"),
    ],
)
def test_bad_kafka_settings_say_what_is_wrong(settings, message):
    with pytest.raises(ConfigError, match=message):
        StreamsConfig.load({"application_id": "a", **settings})
