"""Which batch a store query reads, driven through the commit protocol's own pieces (no Spark): a
batch decided but not yet published (the instance died between steps 3 and 4, or is publishing)
is committed, and the query includes it, as the next start's roll-forward and restore will; a
batch not decided is not there; ``as_of_batch`` reads the changelog as an older batch left it."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from deltastreams.conf.errors import StoreQueryError
from deltastreams.sinks import create_topic
from deltastreams.sinks.transaction import DecidedBatch, TablePublication, TransactionLog
from deltastreams.streams.query import StoreQuery
from deltastreams.topology.upgrade import TopologyRecord

APP = "proto"
_COUNT = struct.Struct(">qq")


class Job:
    """One sub-topology with a count store 'counts', committing batches by hand."""

    def __init__(self, root: str) -> None:
        create_topic(root, "input", partitions=2, key_type=pa.string(), value_type=pa.int64())
        self.changelog = create_topic(root, f"{APP}-counts-changelog", partitions=2, key_type=pa.binary(), value_type=pa.binary())
        self.log = TransactionLog(f"{root}/transactions/{APP}/subtopology-0", f"{APP}/subtopology-0")
        self.log.register("instance-1")
        self.log.keep_with_next_decision({"deltastreams.topology": TopologyRecord(0, ("input",), ("counts",), (), (0,), "").to_json()})
        self.seq = 0

    def decide(self, changes: dict[str, int | None]):
        """Step 3: the batch's changelog files written and named by a decision; returns them."""
        records = pa.table(
            {
                "key": pa.array([k.encode() for k in changes], pa.binary()),
                "value": pa.array([None if v is None else _COUNT.pack(v, 1000 + self.seq) for v in changes.values()], pa.binary()),
                "timestamp": pa.array([1000 + self.seq] * len(changes), pa.int64()),
            }
        )
        files = self.changelog.prepare_files(records, self.changelog.end_offsets())
        batch = DecidedBatch(self.seq, self.log.epoch, {"input": (self.seq - 1, self.seq)}, {self.changelog.name: TablePublication(self.changelog.uri, tuple(files))})
        self.log.decide(batch)
        self.seq += 1
        return batch.seq, files

    def publish(self, seq: int, files) -> None:
        """Step 4."""
        self.changelog.commit(files, txn=(self.log.txn_app_id, seq))


def test_a_decided_batch_counts_before_it_is_published_and_older_batches_stay_readable(tmp_path):
    root = str(tmp_path)
    job = Job(root)
    job.publish(*job.decide({"a": 1, "b": 2, "c": 3}))
    job.publish(*job.decide({"c": 4}))
    unpublished = job.decide({"a": 5, "b": None})  # decided, not published: committed all the same

    latest = StoreQuery(root, APP, "counts")
    assert latest.batch == 2
    assert latest.all() == [("a", 5), ("c", 4)]
    assert StoreQuery(root, APP, "counts", as_of_batch=0).all() == [("a", 1), ("b", 2), ("c", 3)]
    assert StoreQuery(root, APP, "counts", as_of_batch=1).all() == [("a", 1), ("b", 2), ("c", 4)]
    assert StoreQuery(root, APP, "counts", as_of_batch=2).all() == [("a", 5), ("c", 4)]

    # Files written for a batch that is never decided (a crash before step 3) are not committed.
    orphan = job.changelog.prepare_files(pa.table({"key": [b"z"], "value": [_COUNT.pack(9, 0)], "timestamp": pa.array([0], pa.int64())}), job.changelog.end_offsets())
    assert orphan and latest.get("z") is None

    # The roll-forward publishes the decided batch: nothing changes for the kept query; the next
    # decided batch moves it, reading only what is new.
    job.publish(*unpublished)
    assert latest.all() == [("a", 5), ("c", 4)] and latest.batch == 2
    job.decide({"d": 7})
    assert latest.get("d") == 7 and latest.batch == 3
    assert latest.all() == StoreQuery(root, APP, "counts").all() == [("a", 5), ("c", 4), ("d", 7)]


def test_a_batch_newer_than_the_last_decided_is_refused(tmp_path):
    root = str(tmp_path)
    job = Job(root)
    job.publish(*job.decide({"a": 1}))
    with pytest.raises(StoreQueryError, match=r"batch 1 of sub-topology 0 is not committed: committed batches of store 'counts' are 0\.\.0"):
        StoreQuery(root, APP, "counts", as_of_batch=1)


def test_the_query_command_prints_the_committed_batch_as_csv_and_errors_as_one_line(tmp_path, capsys):
    from deltastreams.jobs.query import main

    root = str(tmp_path)
    job = Job(root)
    job.publish(*job.decide({"a": 1, "b": 2, "c": 3}))
    job.decide({"b": 20})
    assert main(["--root", root, "--application-id", APP, "--from-key", "b", "--to-key", "c"]) == 0
    out, err = capsys.readouterr()
    assert out == "key,value,timestamp\nb,20,1001\nc,3,1000\n"
    assert err == "store counts of proto: 2 entries as of batch 1 of sub-topology 0\n"
    assert main(["--root", root, "--application-id", APP, "--store", "count", "--as-of-batch", "0"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", "error: application 'proto' has no store 'count'; its stores: ['counts']\n")
    assert main(["--root", root, "--application-id", APP, "--key", "a", "--from", "0", "--to", "5"]) == 1
    assert capsys.readouterr().err == "error: store 'counts' is a key-value store: its entries have no time to select by\n"
