"""A user's application file gets the bundled jobs' command line from one call
(``StreamsApp.main``), and any application the operations commands from ``deltastreams``: what
they print, the settings they read, and their errors, without Spark (``run`` is covered by
tests/test_docs.py and the jobs' tests)."""

from __future__ import annotations

import logging
import sys
import textwrap

import pyarrow as pa
import pytest

from deltastreams.conf.errors import ConfigError
from deltastreams.sinks import create_topic
from deltastreams.streams import StreamsApp, StreamsBuilder, StreamsConfig, TimeWindows
from deltastreams.streams.console import log_to
from deltastreams.streams.operations import load_config
from tests.logging_support import logging_put_back

APP = {"application_id": "counts"}


def build_topology():
    builder = StreamsBuilder()
    (builder.stream("clicks", key_type=pa.string(), value_type=pa.string())
        .group_by_key().windowed_by(TimeWindows.of_size(10)).count(name="per-user").to_stream().to("click-counts", key_column="user", value_column="n"))  # fmt: skip
    return builder.build()


def test_the_front_door_names_import_from_the_dsl_package():
    from deltastreams.streams import ApplicationFailedError, StreamsApp as App, StreamsConfig as Config  # noqa: F401 - importing them is the test

    assert App.__module__ == "deltastreams.streams.app" and Config is StreamsConfig


def test_main_gives_a_program_describe_and_exits_with_its_code(capsys):
    with pytest.raises(SystemExit) as exit_:
        StreamsApp.main(build_topology, APP, argv=["describe"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == str(build_topology().describe())


def test_a_program_without_an_application_id_is_told_so_not_shown_a_traceback(capsys):
    with pytest.raises(SystemExit) as exit_:
        StreamsApp.main(build_topology, {}, argv=["describe"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.startswith("error: the application's settings need its application_id")


def test_every_command_of_the_bundled_jobs_is_there():
    cli = StreamsApp.command_line(build_topology, APP)
    for command in ("run", "describe", "results", "status", "reset", "query", "rescale", "compact"):
        with pytest.raises(SystemExit) as help_:
            cli.main([command, "--help"])
        assert help_.value.code == 0, command


def _output(root, records: list[tuple[str, int, int, int | None]]) -> None:
    topic = create_topic(root, "click-counts", partitions=1, key_type=pa.string(), value_type=pa.int64(), key_column="user", value_column="n", windowed=True)
    topic.append(pa.table({
        "key": [r[0] for r in records], "window_start": pa.array([r[1] for r in records], pa.int64()),
        "window_end": pa.array([r[1] + 10 for r in records], pa.int64()), "timestamp": pa.array([r[2] for r in records], pa.int64()),
        "value": pa.array([r[3] for r in records], pa.int64()),
    }))  # fmt: skip


def test_results_prints_every_record_or_the_latest_per_key_and_window(tmp_path, capsys):
    _output(tmp_path, [("ann", 0, 1, 1), ("bob", 0, 2, 1), ("ann", 0, 3, 2), ("ann", 10, 11, 1), ("bob", 0, 4, None)])
    cli = StreamsApp.command_line(build_topology, APP)
    assert cli.main(["results", "--root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "partition,offset,timestamp,window_start,window_end,user,n"
    assert lines[1:] == ["0,0,1,0,10,ann,1", "0,1,2,0,10,bob,1", "0,2,3,0,10,ann,2", "0,3,11,10,20,ann,1", "0,4,4,0,10,bob,"]
    assert cli.main(["results", "--root", str(tmp_path), "--latest"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["0,2,3,0,10,ann,2", "0,3,11,10,20,ann,1"]  # bob's window deleted


def test_options_that_shape_the_topology_reach_every_command_that_builds_it(tmp_path, capsys):
    def topology(options):
        builder = StreamsBuilder()
        builder.stream("clicks", key_type=pa.string(), value_type=pa.string()).to(options.output)
        return builder.build()

    cli = StreamsApp.command_line(topology, APP)
    cli.add_option("--output", default="click-counts", topology=True)
    _output(tmp_path, [("ann", 0, 1, 1)])
    assert cli.main(["results", "--root", str(tmp_path), "--output", "click-counts"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["0,0,1,0,10,ann,1"]
    assert cli.main(["describe", "--output", "elsewhere"]) == 0
    assert "(topic: elsewhere)" in capsys.readouterr().out


def test_results_of_a_root_where_nothing_ran_says_so(tmp_path, capsys):
    assert StreamsApp.command_line(build_topology, APP).main(["results", "--root", str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err.startswith(f"error: no deltastreams root at {tmp_path / 'nowhere'}")


def test_status_of_an_application_that_never_ran(tmp_path, capsys):
    create_topic(tmp_path, "clicks", partitions=1, key_type=pa.string(), value_type=pa.string())
    assert StreamsApp.command_line(build_topology, APP).main(["status", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"application counts under {tmp_path}: NEVER RAN"), out
    assert "store per-user: changelog counts-per-user-changelog" in out and "outputs: click-counts" in out


def test_settings_are_the_programs_then_the_file_then_set_then_flags(tmp_path):
    file = tmp_path / "settings.toml"
    file.write_text('commit_interval_ms = 300\nnum_partitions = 5\n[retention]\npurge_interval_ms = 7\n')
    own = {"application_id": "counts", "commit_interval_ms": 100, "num_partitions": 3, "caching": False, "retention": {"compaction_min_files": 9}}
    cli = StreamsApp.command_line(build_topology, own)
    options = cli.parser.parse_args(["run", "--root", "r", "--config", str(file), "--set", "num_partitions=6", "--partitions", "7"])
    config = load_config(own, options, {"num_partitions": options.partitions, "root": options.root})
    assert (config.commit_interval_ms, config.num_partitions, config.caching) == (300, 7, False)
    assert (config.retention.purge_interval.total_seconds(), config.retention.compaction_min_files) == (0.007, 9)  # tables merge key by key
    with pytest.raises(ConfigError, match="--set takes KEY=VALUE"):
        load_config(own, cli.parser.parse_args(["run", "--root", "r", "--set", "caching"]))


def test_two_options_giving_one_setting_different_values_are_refused(capsys):
    cli = StreamsApp.command_line(build_topology, APP)
    cli.add_option("--left", settings=lambda v: {"kafka.bootstrap_servers": v}, commands=("status",))
    cli.add_option("--right", settings=lambda v: {"kafka.bootstrap_servers": v}, commands=("status",))
    assert cli.main(["status", "--root", "r", "--left", "a:1", "--right", "b:2"]) == 1
    assert "--left and --right give kafka.bootstrap_servers different values" in capsys.readouterr().err
    with pytest.raises(ValueError, match="has a command 'status' already"):
        cli.add_command("status", "again", lambda options: 0)


def test_the_deltastreams_tool_reads_a_topology_from_a_users_file(tmp_path, capsys, monkeypatch):
    from deltastreams.jobs.cli import main

    app = tmp_path / "my_app.py"
    app.write_text(textwrap.dedent('''
        import pyarrow as pa
        from deltastreams.streams import StreamsBuilder

        def build_topology():
            builder = StreamsBuilder()
            builder.stream("events", key_type=pa.string(), value_type=pa.string()).to("copies")
            return builder.build()
    '''))
    create_topic(tmp_path, "events", partitions=1, key_type=pa.string(), value_type=pa.string())
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["status", "--root", str(tmp_path), "--application-id", "mine", "--topology", f"{app}:build_topology"]) == 0
    assert "input events" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:  # an application the tool does not know needs its topology
        main(["status", "--root", str(tmp_path), "--application-id", "mine"])
    assert refused.value.code == 2 and "--topology is needed for application 'mine'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["status", "--root", str(tmp_path), "--application-id", "mine", "--topology", f"{app}:nothing_here"])
    assert "--topology" in capsys.readouterr().err


@pytest.fixture
def logging_restored():
    with logging_put_back():
        yield


def test_an_application_in_a_program_logs_its_lines_to_the_console_and_everything_to_its_file(tmp_path, capsys, logging_restored):
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    log_to(first)
    logging.getLogger("deltastreams").info("a batch line")
    logging.getLogger("deltastreams.state.task_stores").debug("a detail")
    logging.getLogger("somebody.else").warning("the program's own")  # not ours: left to the program
    err = capsys.readouterr().err
    assert "INFO a batch line" in err and "a detail" not in err
    assert "a batch line" in first.read_text() and "a detail" in first.read_text() and "the program's own" not in first.read_text()
    log_to(second)  # the next application in the same process: its own file, the first one's handlers gone
    logging.getLogger("deltastreams").info("another line")
    assert capsys.readouterr().err.count("another line") == 1
    assert "another line" in second.read_text() and "another line" not in first.read_text()
