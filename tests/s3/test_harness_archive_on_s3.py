"""The crash harness on an s3:// root (``--s3``) keeps every commit file through the store's API
and checks a local copy: the archive must hold what log retention deleted from the store."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from deltastreams.devtools.harness.log_archive import ARCHIVE, LogArchiver, history
from deltastreams.sinks.retention import clean_log
from tests.jobs.test_harness_log_archive import busy_topic


def test_the_archive_of_an_s3_root_keeps_every_commit_that_log_retention_deletes(s3_server, s3_root, tmp_path):
    topic, table = busy_topic(s3_root, 12)
    archiver = LogArchiver(s3_root, filesystem=s3_server.filesystem(), archive=tmp_path / ARCHIVE)
    archiver.archive_once()
    assert clean_log(table, keep_versions=1).files_deleted > 0
    topic.append(pa.table({"key": ["late"], "value": pa.array([0], pa.int64()), "timestamp": pa.array([0], pa.int64())}))
    with archiver:
        pass
    s3_server.download(s3_root, tmp_path)
    commits, missing = history(str(tmp_path), tmp_path / "topics" / "t")
    assert missing == []
    assert [c.version for c in commits] == list(range(15))
    assert sum(len(c.adds()) for c in commits) == 13
    assert not (Path(tmp_path) / "topics" / "t" / "_delta_log" / f"{0:020}.json").exists()  # only the archive has it
