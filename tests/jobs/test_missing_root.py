"""Every job command that reads a root says so when there is none (a mistyped ``--root``), in one
line and with a non-zero exit code: not an empty result, not a traceback (:func:`deltastreams.streams.operations.require_root`)."""

from __future__ import annotations

import importlib

import pyarrow as pa
import pytest

from deltastreams.conf.errors import ConfigError
from deltastreams.streams.operations import require_root
from deltastreams.sinks import create_topic, root_has_topics

COMMANDS = [
    ("deltastreams.jobs.pageview", ["results"]),
    ("deltastreams.jobs.pageview", ["results", "--raw"]),
    ("deltastreams.jobs.enrich", ["results"]),
    ("deltastreams.jobs.clicks", ["results"]),
    ("deltastreams.jobs.clicks", ["close"]),
    ("deltastreams.jobs.dedup", ["results"]),
    ("deltastreams.devtools.bench.user_counts", ["check"]),
    ("deltastreams.jobs.compact", ["--application-id", "pageview"]),
    ("deltastreams.jobs.pageview", ["status"]),
    ("deltastreams.jobs.pageview", ["reset", "--to-earliest"]),
    ("deltastreams.devtools.bench.user_counts", ["status"]),
    ("deltastreams.jobs.status", ["--application-id", "pageview"]),
    ("deltastreams.jobs.reset", ["--application-id", "pageview", "--to-latest"]),
]


@pytest.mark.parametrize("module, command", COMMANDS, ids=[" ".join([m.removeprefix("deltastreams.jobs."), *c[:2]]) for m, c in COMMANDS])
def test_a_command_on_a_root_that_does_not_exist_says_so(module, command, tmp_path, capsys):
    root = tmp_path / "pvv"
    assert importlib.import_module(module).main([*command, "--root", str(root)]) == 1
    out = capsys.readouterr()
    assert out.err == f"error: no deltastreams root at {root} (nothing was ever generated or run there); check --root\n"
    assert out.out == "" and not root.exists()  # nothing printed as a result, nothing created


def test_rescale_on_a_root_that_does_not_exist_says_so_itself(tmp_path, capsys):
    from deltastreams.jobs import rescale

    root = tmp_path / "pvv"
    assert rescale.main(["--root", str(root), "--application-id", "pageview", "--partitions", "4"]) == 2
    assert capsys.readouterr().err == f"error: root {root} does not exist\n"


def test_an_empty_folder_is_no_root_and_one_topic_makes_it_one(tmp_path):
    with pytest.raises(ConfigError, match="no deltastreams root at"):
        require_root(tmp_path)
    assert not root_has_topics(tmp_path / "missing")
    create_topic(tmp_path, "anything", partitions=1, key_type=pa.string(), value_type=pa.int64())
    assert root_has_topics(tmp_path)
    require_root(tmp_path)


def test_results_of_a_root_whose_job_has_not_run_yet_are_empty_not_an_error(tmp_path, capsys):
    from deltastreams.jobs import pageview

    assert pageview.main(["generate", "--root", str(tmp_path), "--events", "10"]) == 0
    assert pageview.main(["results", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "category,window_start,window_end,count\n"
