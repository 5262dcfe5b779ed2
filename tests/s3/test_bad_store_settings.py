"""A root the store cannot serve fails at start with a message naming what to fix (credentials,
bucket, endpoint), not with delta-rs' or a Spark task's error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deltastreams.conf.errors import ConfigError
from deltastreams.sinks import require_reachable, use_storage_options


@pytest.mark.parametrize(
    "change, root, message",
    [
        ({"AWS_SECRET_ACCESS_KEY": "wrong"}, "s3://deltastreams/app", "refused the credentials: check storage_options.AWS_ACCESS_KEY_ID"),
        ({"AWS_ACCESS_KEY_ID": "nobody"}, "s3://deltastreams/app", "refused the credentials"),
        ({}, "s3://no-such-bucket/app", "in bucket 'no-such-bucket', which does not exist at http://127.0.0.1:"),
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, "s3://deltastreams/app", "nothing answers at the endpoint: check storage_options.AWS_ENDPOINT_URL"),
    ],
)
def test_an_unusable_root_is_refused_with_what_to_fix(s3_options, change, root, message):
    use_storage_options({**s3_options, **change})
    with pytest.raises(ConfigError) as raised:
        require_reachable(root)
    assert message in str(raised.value)


def test_a_usable_root_passes_even_before_anything_is_written(s3_options):
    require_reachable("s3://deltastreams/nothing-here-yet")


def test_the_job_says_so_on_the_command_line_without_a_traceback(s3_options, tmp_path):
    settings = [arg for name, value in {**s3_options, "AWS_SECRET_ACCESS_KEY": "wrong"}.items() for arg in ("--set", f"storage_options.{name}={value}")]
    for command in (["run", "--until-caught-up", "--set", f"state_dir={tmp_path}"], ["results"], ["generate", "--events", "10"]):
        out = subprocess.run([sys.executable, "-m", "deltastreams.jobs.pageview", command[0], "--root", "s3://deltastreams/app", *command[1:], *settings],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert out.returncode == 1, (command, out.stderr[-2000:])
        assert "error: cannot use the root s3://deltastreams/app" in out.stderr and "Traceback" not in out.stderr, (command, out.stderr[-2000:])


def test_results_on_an_s3_root_with_nothing_under_it_say_there_is_no_root(s3_options, capsys):
    from deltastreams.jobs import pageview

    settings = [arg for name, value in s3_options.items() for arg in ("--set", f"storage_options.{name}={value}")]
    assert pageview.main(["results", "--root", "s3://deltastreams/nothing-here-yet", *settings]) == 1
    assert capsys.readouterr().err.startswith("error: no deltastreams root at s3://deltastreams/nothing-here-yet (nothing was ever generated or run there)")
