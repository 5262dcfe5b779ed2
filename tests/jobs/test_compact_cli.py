import pyarrow as pa

from deltastreams.jobs.compact import main
from deltastreams.sinks import Topic, create_topic


def test_compact_cli_compacts_every_changelog_of_the_application(tmp_path, capsys):
    topic = create_topic(tmp_path, "app-counts-changelog", partitions=1, key_type=pa.binary(), value_type=pa.binary())
    for value in (b"1", b"2", b"3"):
        topic.append(pa.table({"key": [b"k", b"j"], "value": [value, value], "timestamp": pa.array([0, 0], pa.int64())}))
    assert main(["--root", str(tmp_path), "--application-id", "app"]) == 0
    assert "app-counts-changelog: 4 -> 0 records, 2 -> 0 files" in capsys.readouterr().out  # the newest file supersedes both keys
    assert Topic.open(tmp_path, "app-counts-changelog").read()["value"].to_pylist() == [b"3", b"3"]


def test_compact_cli_says_when_there_is_nothing_to_compact(tmp_path, capsys):
    create_topic(tmp_path, "other-app-counts-changelog", partitions=1, key_type=pa.binary(), value_type=pa.binary())
    assert main(["--root", str(tmp_path), "--application-id", "app"]) == 1
    assert "no changelog topics of 'app'" in capsys.readouterr().err
