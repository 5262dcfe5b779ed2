"""[storage_options]: from files, mappings, --set keys and the AWS environment variables, with
clear errors; and what they become for delta-rs and pyarrow (one place: deltastreams.sinks._internal.storage)."""

from __future__ import annotations

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import ConfigError
from deltastreams.sinks import current_storage_options, use_storage_options
from deltastreams.sinks._internal.storage import delta_options, object_store_filesystem

ENDPOINT = "http://127.0.0.1:9"


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(name, raising=False)
    yield
    use_storage_options(None)


def test_options_come_from_a_file_a_mapping_dotted_keys_and_the_environment(tmp_path, monkeypatch):
    assert StreamsConfig.load({"application_id": "a"}).storage_options == {}  # local roots need none
    file = tmp_path / "app.toml"
    file.write_text(f'[storage_options]\nAWS_ENDPOINT_URL = "{ENDPOINT}"\nAWS_ALLOW_HTTP = true\n')
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    config = StreamsConfig.load({"application_id": "a", "storage_options.aws_access_key_id": "from-set", "storage_options": {"AWS_SECRET_ACCESS_KEY": "s"}}, file=file)
    assert config.storage_options == {
        "AWS_ENDPOINT_URL": ENDPOINT,
        "AWS_ALLOW_HTTP": "true",
        "AWS_REGION": "eu-west-1",  # the environment where no setting says
        "AWS_ACCESS_KEY_ID": "from-set",  # a setting wins over the environment; keys are case-insensitive
        "AWS_SECRET_ACCESS_KEY": "s",
    }
    assert "AWS_SECRET_ACCESS_KEY" not in repr(config) and "from-set" not in repr(config)


@pytest.mark.parametrize(
    ("settings", "setting", "message"),
    [
        ({"storage_options.AWS_ENDPOINT_URL": "127.0.0.1:9"}, "storage_options.AWS_ENDPOINT_URL", "must be a URL"),
        ({"storage_options.AWS_ENDPOINT_URL": ENDPOINT}, "storage_options.AWS_ALLOW_HTTP", "AWS_ALLOW_HTTP=true"),
        ({"storage_options.AWS_ALLOW_HTTP": "maybe"}, "storage_options.AWS_ALLOW_HTTP", "true or false"),
        ({"storage_options": {"AWS_REGION": ["a"]}}, "storage_options.AWS_REGION", "single value"),
        ({"storage_options": "x"}, "storage_options", "table of settings"),
    ],
)
def test_bad_storage_options_name_the_setting(settings, setting, message):
    with pytest.raises(ConfigError, match=message) as raised:
        StreamsConfig.load({"application_id": "a", **settings})
    assert raised.value.setting == setting


def test_one_place_turns_options_into_delta_rs_and_pyarrow_settings():
    options = {"AWS_ENDPOINT_URL": ENDPOINT, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "r", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    use_storage_options(options)
    assert current_storage_options() == options
    assert delta_options("s3://bucket/prefix/topics/t") == options
    assert delta_options("/local/path") is None and delta_options("file:///local/path") is None  # local roots: as before
    fs, path = object_store_filesystem("s3://bucket/prefix/topics/t")
    assert path == "bucket/prefix/topics/t"
    assert type(fs).__name__ == "S3FileSystem" and fs.region == "r"
    assert "127.0.0.1:9" in repr(fs.__reduce__())  # endpoint_override travels with the filesystem


def test_an_object_store_root_keeps_its_state_on_local_disk_one_directory_per_root(tmp_path):
    def state(root, **more):
        return StreamsConfig.load({"application_id": "a", "root": root, **more}).local_state_dir

    assert state(str(tmp_path)) == str(tmp_path / "state")
    on_s3 = state("s3://bucket/prefix/")
    assert not on_s3.startswith("s3:") and on_s3.endswith("state") and "bucket/prefix" in on_s3
    assert state("s3://bucket/other") != on_s3
    assert state("s3://bucket/prefix", state_dir="/mnt/local") == "/mnt/local"
