"""The crash harness's checks: what the job left, against computations that share no code with it.

They hold with retention running in the job (purge, compaction, optimize, file and log cleanup):
history comes from the harness's archive of every commit file (:mod:`deltastreams.devtools.harness.log_archive`)
and from removed data files, which the harness keeps on disk (``retention.removed_file_delay_ms``).
- the latest revision of every window equals an independent pandas computation (with
  ``--emit final``: exactly one result per window, equal to it);
- every record ever committed to the repartition topic is a filtered input record, each exactly once;
- no window's revisions repeat (a replayed batch would repeat them); no changelog entry repeats;
- no file was added twice to an output table (an incremental reader would read it twice);
- every local store equals its full original changelog replayed up to the offset the store says
  it applied, and catching it up from the compacted changelog (or rebuilding it from offset 0,
  below the changelog's clean watermark) gives the full changelog's final state;
- under exactly_once, every file ever added as data to an output table belongs to a decided
  batch, and every file rewritten by retention (``dataChange = false``) holds exactly the
  records decided files hold at the same offsets (read_committed).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.devtools.harness.log_archive import Commit, history
from deltastreams.jobs.pageview import APPLICATION_ID, INPUT_TOPIC, OUTPUT_TOPIC, read_results
from deltastreams.sinks import DataFile, open_table
from deltastreams.streams.errors import UnreadableFileError

WINDOW_MS, GRACE_MS = 5000, 5000
REPARTITION = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"


@dataclass
class Report:
    guarantee: str
    emit: str
    retention: str = "off"
    trials: int = 0
    kills: Counter = field(default_factory=Counter)
    runs_finished_early: int = 0
    violations: list[str] = field(default_factory=list)
    duplicated_repartition_records: int = 0
    missing_repartition_records: int = 0
    repeated_revisions: int = 0
    repeated_changelog_entries: int = 0
    duplicated_files: int = 0
    wrong_windows: int = 0
    windows: int = 0
    stores_checked: int = 0
    rewritten_files_checked: int = 0
    tables: dict[str, str] = field(default_factory=dict)
    """Per table: files and records live in its snapshot against ever committed, and commit
    files left in its log (what retention removed)."""
    corruptions: Counter = field(default_factory=Counter)
    """Local state damaged between trials (``--corrupt``), by kind."""
    stores_moved_aside: int = 0
    seconds: float = 0.0
    storage: str = "local disk"
    """Where the job's root was: ``local disk`` or an object store (the checks read a local copy)."""
    source: str = "delta"
    """Where the job read its input: ``delta``, or ``kafka`` (the checks read the same events from
    the Delta copy under the root)."""
    sink: str = "delta"
    """Where the job wrote its counts: ``delta``, or ``delta + kafka`` (also published to Kafka)."""
    kafka_sink_records: int = 0
    """Records of the Delta output checked against Kafka (each exactly once there, in order)."""
    kafka_aborted_records: int = 0
    """Records of aborted Kafka transactions (left by kills inside one) in the Kafka topic's log,
    which read_committed readers skip."""

    def summary(self) -> str:
        lines = [
            f"guarantee {self.guarantee}, emit {self.emit}, retention {self.retention}, source {self.source}, sink {self.sink}, storage {self.storage}: {self.trials} trials in {self.seconds:.0f} s "
            f"(kills: {dict(self.kills)}; runs that finished before their kill: {self.runs_finished_early})",
            f"  windows checked: {self.windows}, wrong: {self.wrong_windows}",
            f"  repartition records duplicated: {self.duplicated_repartition_records}, missing: {self.missing_repartition_records}",
            f"  repeated revisions: {self.repeated_revisions}, repeated changelog entries: {self.repeated_changelog_entries}, "
            f"files added twice: {self.duplicated_files}",
            f"  stores checked against their changelogs: {self.stores_checked}, rewritten files checked: {self.rewritten_files_checked}",
        ]
        if self.sink != "delta":
            lines.append(
                f"  Kafka sink: {self.kafka_sink_records} output records checked in Kafka (read_committed: each exactly once, in order); "
                f"aborted records in Kafka's log: {self.kafka_aborted_records}"
            )
        if self.corruptions:
            lines.append(f"  local state damaged between trials: {dict(self.corruptions)}; corrupt stores moved aside and rebuilt: {self.stores_moved_aside}")
        lines += [f"  {name}: {state}" for name, state in sorted(self.tables.items())]
        lines.append(f"  violations: {len(self.violations)}")
        lines += [f"    - {v}" for v in self.violations[:20]]
        return "\n".join(lines)


@dataclass
class TableHistory:
    """Everything ever committed to one topic."""

    name: str
    partitions: int
    commits: list[Commit]
    records: pa.Table
    """Every record ever added as data (``dataChange = true``), in record form."""
    data_files: list[str]
    rewritten_files: set[str]
    """Files added with ``dataChange = false`` (retention's rewrites)."""


def check(root: str, report: Report) -> None:
    from deltastreams.devtools.harness.pageview_reference import final_counts, source_events

    repartition = _history(root, REPARTITION, report)
    if report.source == "kafka":
        # Which source partition runs ahead within a batch depends on how batches are cut (whole
        # Delta versions, or offsets shared out per Kafka partition), and so do the late records;
        # so the counts are checked against the repartition topic's own order (the order the
        # counting task read), whose records are checked against the source below.
        expected = counts_in_order(repartition)
    else:
        expected = final_counts(source_events(root), window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    _check_counts(root, report, expected, repartition)
    _check_repartition(root, report, repartition)
    _check_revisions(root, report)
    changelogs = [_history(root, p.name, report) for p in sorted((Path(root) / "topics").glob(f"{APPLICATION_ID}-*-changelog"))]
    _check_changelogs_and_stores(root, report, changelogs)
    output = _history(root, OUTPUT_TOPIC, report) if (Path(root) / "topics" / OUTPUT_TOPIC).exists() else None
    tables = [t for t in (output, repartition, *changelogs) if t is not None]
    _check_files_added_once(report, tables)
    if report.guarantee == "exactly_once":
        _check_read_committed(root, report, tables)


def _history(root: str, name: str, report: Report) -> TableHistory:
    from deltastreams.sinks import Topic

    commits, missing = history(root, Path(root) / "topics" / name)
    if missing:
        report.violations.append(
            f"{name}: the harness's log archive misses versions {missing[:10]} (deleted before it copied them): "
            "raise retention.log_keep_versions in the harness; checks of this table are incomplete"
        )
    topic = Topic.open(root, name)
    data = [_added(a) for c in commits for a in c.adds() if a.get("dataChange", True)]
    rewritten = {a["path"] for c in commits for a in c.adds() if not a.get("dataChange", True)}
    try:
        records = topic.read_files(data)
    except (FileNotFoundError, UnreadableFileError) as e:
        report.violations.append(f"{name}: a file committed as data is gone from storage ({e})")
        records = topic.read_files([f for f in data if (Path(topic.uri) / f.path).exists()])
    snapshot = topic.files()
    report.tables[name] = (
        f"{len(snapshot)} of {len(data) + len(rewritten)} files live, {sum(f.num_records for f in snapshot):,} of "
        f"{records.num_rows:,} records, {len(list(Path(topic.uri, '_delta_log').glob('*.json')))} of {len(commits)} commit files"
    )
    return TableHistory(name, topic.partitions, commits, records, [f.path for f in data], rewritten)


def _added(add: dict) -> DataFile:
    stats = json.loads(add.get("stats") or "{}")
    return DataFile(
        add["path"],
        int(add["partitionValues"]["partition"]),
        int(stats.get("numRecords", -1)),
        int(stats.get("minValues", {}).get("offset", -1)),
        int(stats.get("maxValues", {}).get("offset", -1)),
    )


def counts_in_order(repartition: TableHistory) -> pd.DataFrame:
    """Final counts of the records of each repartition partition taken in offset order: stream
    time is their running maximum timestamp; a record counts for its window unless window end +
    grace is at or behind stream time (the semantics of :func:`deltastreams.devtools.harness.pageview_reference.final_counts`,
    step 3)."""
    records = repartition.records
    counts: Counter = Counter()
    for p in range(repartition.partitions):
        rows = records.filter(pc.equal(records["partition"], p)).sort_by("offset")
        stream_time = -1
        for category, ts in zip(rows["key"].to_pylist(), rows["timestamp"].to_pylist(), strict=True):
            stream_time = max(stream_time, ts)
            start = ts - ts % WINDOW_MS
            if start + WINDOW_MS + GRACE_MS > stream_time:
                counts[(category, start)] += 1
    rows = [(c, s, s + WINDOW_MS, n) for (c, s), n in counts.items()]
    return pd.DataFrame(rows, columns=["category", "window_start", "window_end", "count"])


def _check_counts(root, report, expected, repartition: TableHistory) -> None:
    want = {(r.category, r.window_start): r.count for r in expected.itertuples()}
    got = {(r.category, r.window_start): r.count for r in read_results(root).to_pandas().itertuples()}
    if report.emit == "final":
        raw = read_results(root, raw=True).to_pandas()
        per_window = raw.groupby(["category", "window_start"]).size()
        for (category, start), n in per_window[per_window > 1].items():
            report.repeated_revisions += n - 1
            report.violations.append(f"window ({category}, {start}) emitted {n} final results")
        want = {k: v for k, v in want.items() if k in _closed_windows(set(want), repartition)}
    report.windows = len(want)
    for key in sorted(set(want) | set(got)):
        if want.get(key) != got.get(key):
            report.wrong_windows += 1
            if report.guarantee == "exactly_once":
                report.violations.append(f"window {key}: count {got.get(key)}, expected {want.get(key)}")


def _closed_windows(windows, repartition: TableHistory) -> set:
    """Windows whose end + grace is at or below their task's final stream time (emit-final
    emits exactly those): stream time over every record the task ever read, purged or not."""
    from deltastreams.sinks import partition_for

    records = repartition.records
    stream_time = {}
    for p in range(repartition.partitions):
        rows = records.filter(pc.equal(records["partition"], p))
        if rows.num_rows:
            stream_time[p] = pc.max(rows["timestamp"]).as_py()
    return {
        (c, s) for c, s in windows if s + WINDOW_MS + GRACE_MS <= stream_time.get(partition_for(c.encode(), repartition.partitions), -1)
    }


def _check_repartition(root, report, repartition: TableHistory) -> None:
    from deltastreams.sinks import Topic

    # Every record ever committed, read commit by commit as a downstream query does (a snapshot
    # would hide a file added twice, and retention removes consumed files from it).
    table = repartition.records
    values = table.column("value")
    got = Counter(zip(table["timestamp"].to_pylist(), pc.struct_field(values, "user_id").to_pylist(), pc.struct_field(values, "page_id").to_pylist(), pc.struct_field(values, "duration_s").to_pylist()))
    source = Topic.open(root, INPUT_TOPIC).read()
    kept = source.filter(pc.greater_equal(pc.struct_field(source["value"], "duration_s"), 30))
    kv = kept.column("value")
    want = Counter(zip(kept["timestamp"].to_pylist(), pc.struct_field(kv, "user_id").to_pylist(), pc.struct_field(kv, "page_id").to_pylist(), pc.struct_field(kv, "duration_s").to_pylist()))
    report.duplicated_repartition_records = sum((got - want).values())
    report.missing_repartition_records = sum((want - got).values())
    if report.guarantee == "exactly_once" and (report.duplicated_repartition_records or report.missing_repartition_records):
        report.violations.append(
            f"repartition topic: {report.duplicated_repartition_records} duplicated, {report.missing_repartition_records} missing records"
        )


def _check_revisions(root, report) -> None:
    if report.emit == "final":
        return
    raw = read_results(root, raw=True).sort_by([("partition", "ascending"), ("offset", "ascending")]).to_pylist()
    last = {}
    for row in raw:
        key = (row["category"], row["window_start"])
        if key in last and row["count"] <= last[key]:
            report.repeated_revisions += 1
            if report.guarantee == "exactly_once":
                report.violations.append(f"window {key}: revision {row['count']} after {last[key]} (offset {row['offset']})")
        last[key] = row["count"]


def changelog_entries(records: pa.Table, partition: int) -> list[tuple[bytes, bytes | None, int]]:
    """(key, value, offset) of one partition's records in offset order."""
    rows = records.filter(pc.equal(records["partition"], partition)).sort_by("offset")
    return list(zip(rows["key"].to_pylist(), rows["value"].to_pylist(), rows["offset"].to_pylist(), strict=True))


def replay(state: dict, entries, start: int = 0, end: int | None = None) -> dict:
    """A copy of ``state`` with the ``entries`` at ``start <= offset < end`` applied (None deletes)."""
    state = dict(state)
    for key, value, offset in entries:
        if offset < start or (end is not None and offset >= end):
            continue
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def _check_changelogs_and_stores(root, report, changelogs: list[TableHistory]) -> None:
    from deltastreams.sinks import Topic
    from deltastreams.sinks.retention import changelog_watermarks
    from deltastreams.state import RocksDBKeyValueStore
    from deltastreams.state.task_stores import APPLIED_OFFSET

    for changelog in changelogs:
        topic = Topic.open(root, changelog.name)
        snapshot = topic.read()
        watermarks = changelog_watermarks(open_table(topic.uri))
        store = changelog.name[len(APPLICATION_ID) + 1 : -len("-changelog")]
        for partition in sorted(set(changelog.records["partition"].to_pylist())):
            full = changelog_entries(changelog.records, partition)
            previous = {}
            for key, value, _ in full:
                if key in previous and previous[key] == value:
                    report.repeated_changelog_entries += 1
                previous[key] = value
            compacted = changelog_entries(snapshot, partition)
            final = replay({}, full)
            if replay({}, compacted) != final:
                report.violations.append(f"changelog {changelog.name} partition {partition}: its snapshot replays to another state than its history")
            path = Path(root) / "state" / APPLICATION_ID / f"1_{partition}" / store
            if not path.exists():
                continue
            db = RocksDBKeyValueStore(store, path)
            try:
                applied = int(db.get_meta(APPLIED_OFFSET) or b"0")
                state = dict(db.range())
            finally:
                db.close()
            report.stores_checked += 1
            if state != replay({}, full, end=applied):
                report.violations.append(f"store {store} of task 1_{partition} differs from its changelog up to offset {applied}")
            elif applied >= watermarks.get(partition, 0) and replay(state, compacted, start=applied) != final:
                report.violations.append(
                    f"store {store} of task 1_{partition} (applied {applied}) caught up from the compacted changelog "
                    "differs from the full changelog's state"
                )
    if report.guarantee == "exactly_once" and report.repeated_changelog_entries:
        report.violations.append(f"{report.repeated_changelog_entries} changelog entries repeat the previous value of their key")


def _check_files_added_once(report, tables: list[TableHistory]) -> None:
    """A file added by two commits would be read twice by incremental readers."""
    for table in tables:
        seen = Counter(a["path"] for c in table.commits for a in c.adds())
        for path, n in seen.items():
            if n > 1:
                report.duplicated_files += 1
                if report.guarantee == "exactly_once":
                    report.violations.append(f"{table.name}: file {path} was added by {n} commits")


def _check_read_committed(root, report, tables: list[TableHistory]) -> None:
    from deltastreams.sinks import Topic

    decided = set()
    for log_dir in sorted((Path(root) / "transactions" / APPLICATION_ID).glob("subtopology-*")):
        commits, missing = history(root, log_dir)
        if missing:
            report.violations.append(f"transaction log {log_dir.name}: the harness's log archive misses versions {missing[:10]}")
        for commit in commits:
            for publication in commit.info().get("tables", {}).values():
                # By table name, not URI: a root copied elsewhere keeps its meaning.
                decided.update((publication["uri"].rstrip("/").rsplit("/", 1)[-1], f["path"]) for f in publication["files"])
    for table in tables:
        topic = Topic.open(root, table.name)
        for path in table.data_files:
            if (table.name, path) not in decided:
                report.violations.append(f"{table.name}: {path} was committed as data, but no decided batch lists it")
        by_offset = {(r["partition"], r["offset"]): r for r in table.records.to_pylist()}
        for f in topic.files():
            if (table.name, f.path) in decided:
                continue
            if f.path not in table.rewritten_files:
                report.violations.append(f"{table.name} holds {f.path}, which no decided batch lists")
                continue
            report.rewritten_files_checked += 1
            for row in topic.read_files([f]).to_pylist():
                if by_offset.get((row["partition"], row["offset"])) != row:
                    report.violations.append(
                        f"{table.name}: rewritten file {f.path} holds a record at partition {row['partition']} offset "
                        f"{row['offset']} that no decided file holds there"
                    )
                    break
