"""The committer's own rules, without Spark."""

import time
from types import SimpleNamespace

import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import BatchTimedOutError
from deltastreams.sinks import DataFile
from deltastreams.streams._internal.runtime.committer import Committer
from deltastreams.streams._internal.runtime.plan import WrittenFile


def written(age_ms: float) -> WrittenFile:
    return WrittenFile("out", 0, DataFile("partition=0/f.parquet", 0, 1, 0, 0, modification_time=int(time.time() * 1000 - age_ms)))


def committer(tmp_path, **retention) -> Committer:
    config = StreamsConfig.load({"application_id": "app", "root": str(tmp_path), "retention": {"orphan_file_delay_ms": 60_000, **retention}})
    return Committer(SimpleNamespace(config=config))


def test_a_batch_older_than_half_the_orphan_delay_is_never_decided(tmp_path):
    # File cleanup deletes unreferenced files once orphan_file_delay old: a batch that slow may
    # have lost its files, so it must be abandoned (Kafka's transaction timeout), not decided.
    committer(tmp_path).check_age([written(10_000), written(20_000)])
    with pytest.raises(BatchTimedOutError, match="abandoned and run again"):
        committer(tmp_path).check_age([written(10_000), written(31_000)])


def test_without_file_cleanup_a_slow_batch_is_decided(tmp_path):
    committer(tmp_path, enabled="false").check_age([written(10 * 60_000)])


def test_a_restart_resumes_every_input_where_it_stood_even_one_the_last_batch_did_not_move(tmp_path):
    # The positions a restart reads are those of the last decided batch: one that consumed only
    # one of two inputs (or, with idle close, none) must still name the other's position, or
    # that input would be read again from its start (duplicates).
    sub = SimpleNamespace(id=0)
    first = committer(tmp_path)
    first.recover([sub])
    first.commit(0, {"clicks": (-1, 3), "users": (-1, 1)}, [])
    first.commit(0, {"clicks": (3, 5)}, [])
    first.commit(0, {}, [])
    restarted = committer(tmp_path)
    restarted.recover([sub])
    assert (restarted.position(0, "clicks"), restarted.position(0, "users")) == (5, 1)
