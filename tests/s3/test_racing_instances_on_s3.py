"""Two instances of one application on one s3:// root, each with its own local state (as on two
machines): the second fences the first, and the output stays exactly once."""

from __future__ import annotations

import pytest

from deltastreams.devtools.harness import crash as crash_harness
from tests.racing_instances import assert_fenced, race

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_second_instance_fences_the_first_on_an_s3_root(s3_server, s3_root, tmp_path, monkeypatch):
    for name, value in s3_server.storage_options.items():  # the jobs reach the store through the AWS variables
        monkeypatch.setenv(name, value)
    copy = tmp_path / "copy"  # the store's contents, for the checks; the second instance's state is in it
    first_code, zombie = race(s3_root, tmp_path / "logs", state_dirs=(tmp_path / "first-state", copy / "state"))
    assert_fenced(first_code, zombie)

    s3_server.download(s3_root, copy)
    report = crash_harness.Report("exactly_once", "revisions")
    crash_harness.check(str(copy), report)
    assert report.violations == [], report.summary()
    assert report.windows > 0 and report.stores_checked > 0, report.summary()
