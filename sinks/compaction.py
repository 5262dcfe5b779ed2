"""Log compaction of a topic (Kafka's ``cleanup.policy=compact``), for changelogs.

Per partition, only the last record of each key is kept, at its original offset (offsets of a
compacted topic have gaps, as in Kafka). Tombstones (null values) are kept too: a store that has
applied the changelog only up to some offset must still see later deletes. Replaying a compacted
changelog from any offset a store has reached therefore yields the same store as replaying the
full log. The rewrite is one Delta commit removing the old files and adding the new ones with
``dataChange = false``, so readers of new versions do not see the kept records as new.

Run it while the application that writes the topic is stopped (``python -m jobs.compact``): the
commit fails cleanly if the topic changed meanwhile.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties
from deltalake.transaction import AddAction, RemoveAction

from sinks._internal.delta_log import snapshot_files
from sinks._internal.files import PARTITION, read_data_file, write_partition_file
from sinks.topics import Topic


@dataclass(frozen=True)
class CompactionResult:
    topic: str
    records_before: int
    records_after: int
    files_before: int
    files_after: int


def compact_topic(root: str, name: str) -> CompactionResult:
    topic = Topic.open(root, name)
    table = topic.delta_table()
    files = snapshot_files(table)
    key_column = topic.layout.key_column
    removes, adds = [], []
    before = after = 0
    now = int(time.time() * 1000)
    for partition in sorted({f.partition for f in files}):
        mine = [f for f in files if f.partition == partition]
        rows = pa.concat_tables([read_data_file(topic.uri, f.path, partition) for f in mine]).sort_by("offset")
        before += rows.num_rows
        keys = pc.dictionary_encode(rows.column(key_column).combine_chunks()).indices.to_numpy(zero_copy_only=False)
        last = np.zeros(int(keys.max()) + 1 if len(keys) else 0, dtype=np.int64)
        last[keys] = np.arange(len(keys))  # later rows overwrite earlier ones: the last per key wins
        kept = rows.take(pa.array(np.sort(last))).drop_columns([PARTITION])
        after += kept.num_rows
        written = write_partition_file(topic.uri, partition, kept)
        adds.append(AddAction(written.path, written.size, {PARTITION: str(partition)}, written.modification_time, False, written.stats_json()))
        removes += [RemoveAction(f.path, False, now, partition_values={PARTITION: str(partition)}) for f in mine]
    if adds:
        table.create_write_transaction(
            removes + adds,
            mode="append",
            schema=topic.layout.table_schema(),
            partition_by=[PARTITION],
            commit_properties=CommitProperties(max_commit_retries=0),
        )
    return CompactionResult(name, before, after, len(files), len(adds))
