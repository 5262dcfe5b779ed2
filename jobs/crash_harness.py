"""Kill the pageview job at random moments and inside the commit protocol; check what survives.

    python -m jobs.crash_harness --root /tmp/harness --trials 200
    python -m jobs.crash_harness --root /tmp/harness-alos --trials 20 --guarantee at_least_once
    python -m jobs.crash_harness --root /tmp/harness-corrupt --trials 50 --corrupt

Each trial starts ``python -m jobs.pageview run --until-caught-up`` as its own process group and
kills it with SIGKILL: either the driver kills itself at a named point of the commit protocol
(``DELTASTREAMS_CRASH_AT``, every point in turn) or the harness kills the whole group after a
random delay. With ``--corrupt``, between trials it also damages local state the way disks and
crashes do (RocksDB files deleted, truncated or overwritten, whole stores missing, Spark
checkpoint files garbled): the job must move corrupt stores aside, rebuild them from their
changelogs and carry on. After the trials, one run without kills finishes the input. Then, against
computations that share no code with the job:
- the latest revision of every window equals an independent pandas computation (with
  ``--emit final``: exactly one result per window, equal to it);
- the repartition topic holds every filtered input record exactly once;
- no window's revisions repeat (a replayed batch would repeat them); no changelog entry repeats;
- every local store equals its changelog replayed up to the offset the store says it applied;
- under exactly_once, every file of every output table belongs to a decided batch (read_committed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow.compute as pc

from jobs.pageview import APPLICATION_ID, INPUT_TOPIC, OUTPUT_TOPIC, generate, read_results
from sinks import files_added
from streams.runtime import CRASH_POINTS

WINDOW_MS, GRACE_MS = 5000, 5000
EVENTS_PER_SECOND = 300
"""Event-time rate of the harness's input: slow enough that thousands of events span many windows,
so windows close (and emit-final emits) during a run."""
REPARTITION = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"


def append_events(root: str, events: int, *, seed: int, appends: int) -> None:
    """Out-of-order pageviews (10% up to 20 s late), at the harness's event-time rate."""
    generate(root, events, seed=seed, late_fraction=0.1, max_lateness_ms=20_000, batches=appends, events_per_second=EVENTS_PER_SECOND)


@dataclass
class Report:
    guarantee: str
    emit: str
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
    corruptions: Counter = field(default_factory=Counter)
    stores_moved_aside: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"guarantee {self.guarantee}, emit {self.emit}: {self.trials} trials in {self.seconds:.0f} s "
            f"(kills: {dict(self.kills)}; runs that finished before their kill: {self.runs_finished_early})",
            f"  windows checked: {self.windows}, wrong: {self.wrong_windows}",
            f"  repartition records duplicated: {self.duplicated_repartition_records}, missing: {self.missing_repartition_records}",
            f"  repeated revisions: {self.repeated_revisions}, repeated changelog entries: {self.repeated_changelog_entries}, "
            f"files added twice: {self.duplicated_files}",
            f"  stores checked against their changelogs: {self.stores_checked}",
            f"  local state damaged between trials: {dict(self.corruptions) or 'never'}; corrupt stores moved aside and rebuilt: {self.stores_moved_aside}",
            f"  violations: {len(self.violations)}",
        ]
        lines += [f"    - {v}" for v in self.violations[:20]]
        return "\n".join(lines)


def job_command(root: str, guarantee: str, emit: str, max_records: int, commit_interval_ms: int = 100) -> list[str]:
    return [
        sys.executable, "-m", "jobs.pageview", "run", "--root", root, "--until-caught-up",
        "--guarantee", guarantee, "--emit", emit, "--grace-ms", str(GRACE_MS), "--window-ms", str(WINDOW_MS),
        "--commit-interval-ms", str(commit_interval_ms), "--max-records-per-batch", str(max_records), "--timeout-s", "600",
    ]


def run_once(command: list[str], *, crash_at: str | None, kill_after_s: float | None, log) -> str:
    """Run the job once; returns how it ended: 'finished', 'crash-point' or 'killed'."""
    env = dict(os.environ)
    env.pop("DELTASTREAMS_CRASH_AT", None)
    if crash_at:
        env["DELTASTREAMS_CRASH_AT"] = crash_at
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    try:
        process.wait(timeout=kill_after_s if kill_after_s is not None else 900)
        ended = "finished" if process.returncode == 0 else ("crash-point" if process.returncode == -signal.SIGKILL else f"failed rc={process.returncode}")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        ended = "killed"
    try:  # the JVM and Python workers go with their driver; make sure of it
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    time.sleep(0.5)
    return ended


def corrupt_local_state(root: str, rng: random.Random) -> list[str]:
    """Damage one store and one checkpoint file at random (if there are any); returns what was done."""
    done = []
    local = Path(root) / "state" / APPLICATION_ID
    stores = [p for p in local.glob("*_*/*") if p.is_dir() and ".corrupt-" not in p.name]
    if stores:
        store = rng.choice(stores)
        files = sorted(f for f in store.iterdir() if f.is_file() and f.name != "LOCK")
        how = rng.choice(["delete CURRENT", "garble MANIFEST", "truncate a file", "overwrite bytes", "delete the store"])
        manifests = [f for f in files if f.name.startswith("MANIFEST")]
        if how == "delete CURRENT" and (store / "CURRENT").exists():
            (store / "CURRENT").unlink()
        elif how == "garble MANIFEST" and manifests:
            _overwrite(manifests[0], rng)
        elif how == "truncate a file" and files:
            target = rng.choice(files)
            os.truncate(target, target.stat().st_size // 2)
        elif how == "overwrite bytes" and files:
            _overwrite(rng.choice(files), rng)
        else:
            how = "delete the store"
            shutil.rmtree(store)
        done.append(f"store: {how}")
    checkpoint_files = [f for f in (local / "checkpoints").rglob("*") if f.is_file()]
    if checkpoint_files:
        target = rng.choice(checkpoint_files)
        _overwrite(target, rng)
        done.append("checkpoint: overwrite bytes")
    return done


def _overwrite(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    for _ in range(min(16, len(data))):
        data[rng.randrange(len(data))] ^= 0xFF
    path.write_bytes(bytes(data) or b"garbage")


def run_trials(
    root: str, *, trials: int, guarantee: str, emit: str, max_records: int, seed: int, log, append_per_trial: int = 0, corrupt: bool = False
) -> Report:
    """``append_per_trial`` new events arrive before every trial, so each trial has work to be
    killed in, however many trials there are. ``corrupt``: damage local state between trials."""
    rng = random.Random(seed)
    report = Report(guarantee, emit)
    command = job_command(root, guarantee, emit, max_records)
    # at_least_once has no decision point: it publishes, then records its progress.
    points = CRASH_POINTS if guarantee == "exactly_once" else tuple(p for p in CRASH_POINTS if p != "after_commit")
    for trial in range(trials):
        if trial < len(points) or rng.random() < 0.3:
            point = points[trial % len(points)] if trial < len(points) else rng.choice(points)
            crash, delay, label = f"{point}@{rng.randint(1, 3)}", None, point
        else:
            crash, delay, label = None, rng.uniform(10.0, 45.0), "random"  # start-up takes ~20 s
        if append_per_trial and trial:
            append_events(root, append_per_trial, seed=seed + trial, appends=1)
        if corrupt and trial:
            for what in corrupt_local_state(root, rng):
                report.corruptions[what] += 1
                print(f"trial {trial + 1}: damaged {what}", file=log, flush=True)
        print(f"trial {trial + 1}/{trials}: {label if crash is None else crash}", file=log, flush=True)
        ended = run_once(command, crash_at=crash, kill_after_s=delay, log=log)
        report.trials += 1
        if ended == "finished":
            report.runs_finished_early += 1
        elif ended.startswith("failed"):
            report.violations.append(f"trial {trial + 1} ({label}) failed instead of crashing: {ended}")
        else:
            report.kills[label] += 1
    ended = run_once(command, crash_at=None, kill_after_s=None, log=log)
    if ended != "finished":
        report.violations.append(f"the final run did not finish: {ended}")
    report.stores_moved_aside = len(list((Path(root) / "state" / APPLICATION_ID).glob("*_*/*.corrupt-*")))
    return report


# -- checks ---------------------------------------------------------------------------------------


def check(root: str, report: Report) -> None:
    from jobs.pageview_reference import final_counts, source_events

    events = source_events(root)
    expected = final_counts(events, window_ms=WINDOW_MS, grace_ms=GRACE_MS)
    _check_counts(root, report, expected)
    _check_repartition(root, report, events)
    _check_revisions(root, report)
    _check_changelogs_and_stores(root, report)
    _check_files_added_once(root, report)
    if report.guarantee == "exactly_once":
        _check_read_committed(root, report)


def _check_counts(root, report, expected) -> None:
    want = {(r.category, r.window_start): r.count for r in expected.itertuples()}
    got = {(r.category, r.window_start): r.count for r in read_results(root).to_pandas().itertuples()}
    if report.emit == "final":
        raw = read_results(root, raw=True).to_pandas()
        per_window = raw.groupby(["category", "window_start"]).size()
        for (category, start), n in per_window[per_window > 1].items():
            report.repeated_revisions += n - 1
            report.violations.append(f"window ({category}, {start}) emitted {n} final results")
        want = {k: v for k, v in want.items() if k in _closed_windows(root, set(want))}
    report.windows = len(want)
    for key in sorted(set(want) | set(got)):
        if want.get(key) != got.get(key):
            report.wrong_windows += 1
            if report.guarantee == "exactly_once":
                report.violations.append(f"window {key}: count {got.get(key)}, expected {want.get(key)}")


def _closed_windows(root, windows) -> set:
    """Windows whose end + grace is at or below their task's final stream time (emit-final
    emits exactly those)."""
    from sinks import Topic, partition_for

    topic = Topic.open(root, REPARTITION)
    records = topic.read()
    stream_time = {}
    for p in range(topic.partitions):
        rows = records.filter(pc.equal(records["partition"], p))
        if rows.num_rows:
            stream_time[p] = pc.max(rows["timestamp"]).as_py()
    return {(c, s) for c, s in windows if s + WINDOW_MS + GRACE_MS <= stream_time.get(partition_for(c.encode(), topic.partitions), -1)}


def _check_repartition(root, report, events) -> None:
    from sinks import Topic

    # Read commit by commit, as a downstream query does (a snapshot would hide a file added twice).
    topic = Topic.open(root, REPARTITION)
    table = topic.read_files(files_added(topic.uri, 0, topic.version()))
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


def _check_changelogs_and_stores(root, report) -> None:
    from sinks import Topic
    from state import RocksDBKeyValueStore
    from state.task_stores import APPLIED_OFFSET

    topics_dir = Path(root) / "topics"
    for changelog_dir in sorted(topics_dir.glob(f"{APPLICATION_ID}-*-changelog")):
        changelog = Topic.open(root, changelog_dir.name).read()
        store = changelog_dir.name[len(APPLICATION_ID) + 1 : -len("-changelog")]
        for partition in sorted(set(changelog["partition"].to_pylist())):
            rows = changelog.filter(pc.equal(changelog["partition"], partition)).sort_by("offset")
            entries = list(zip(rows["key"].to_pylist(), rows["value"].to_pylist(), rows["offset"].to_pylist()))
            previous = {}
            for key, value, _ in entries:
                if key in previous and previous[key] == value:
                    report.repeated_changelog_entries += 1
                previous[key] = value
            path = Path(root) / "state" / APPLICATION_ID / f"1_{partition}" / store
            if not path.exists():
                continue
            db = RocksDBKeyValueStore(store, path)
            try:
                applied = int(db.get_meta(APPLIED_OFFSET) or b"0")
                replay = {}
                for key, value, offset in entries:
                    if offset < applied:
                        if value is None:
                            replay.pop(key, None)
                        else:
                            replay[key] = value
                if dict(db.range()) != replay:
                    report.violations.append(f"store {store} of task 1_{partition} differs from its changelog up to offset {applied}")
                report.stores_checked += 1
            finally:
                db.close()
    if report.guarantee == "exactly_once" and report.repeated_changelog_entries:
        report.violations.append(f"{report.repeated_changelog_entries} changelog entries repeat the previous value of their key")


def _check_files_added_once(root, report) -> None:
    """A file added by two commits would be read twice by incremental readers."""
    from sinks import Topic

    for name in (OUTPUT_TOPIC, REPARTITION, *(p.name for p in (Path(root) / "topics").glob(f"{APPLICATION_ID}-*-changelog"))):
        if not Topic.exists(root, name):
            continue
        topic = Topic.open(root, name)
        seen = Counter(f.path for f in files_added(topic.uri, 0, topic.version()))
        for path, n in seen.items():
            if n > 1:
                report.duplicated_files += 1
                if report.guarantee == "exactly_once":
                    report.violations.append(f"{name}: file {path} was added by {n} commits")


def _check_read_committed(root, report) -> None:
    from sinks import Topic, snapshot_files
    from sinks.transaction import decided_batches

    decided_files = set()
    for log_dir in sorted((Path(root) / "transactions" / APPLICATION_ID).glob("subtopology-*")):
        for batch in decided_batches(str(log_dir)):
            for publication in batch.tables.values():
                decided_files.update((publication.uri, f.path) for f in publication.files)
    for name in (OUTPUT_TOPIC, REPARTITION):
        topic = Topic.open(root, name)
        for f in snapshot_files(topic.delta_table()):
            if (topic.uri, f.path) not in decided_files:
                report.violations.append(f"{name} holds {f.path}, which no decided batch lists")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="a fresh directory for the run's data")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--appends", type=int, default=8)
    parser.add_argument("--append-per-trial", type=int, default=1_500, help="new events before each trial after the first")
    parser.add_argument("--max-records-per-batch", type=int, default=1_500)
    parser.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    parser.add_argument("--emit", choices=("revisions", "final"), default="revisions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corrupt", action="store_true", help="damage local stores and checkpoints between trials")
    parser.add_argument("--log", default=None, help="file for the job's output (default: <root>/harness.log)")
    args = parser.parse_args(argv)
    root = str(Path(args.root).absolute())
    if (Path(root) / "topics").exists():
        print(f"error: {root} already holds topics; give a fresh directory", file=sys.stderr)
        return 2
    started = time.monotonic()
    append_events(root, args.events, seed=args.seed, appends=args.appends)
    with open(args.log or Path(root) / "harness.log", "a") as log:
        report = run_trials(
            root,
            trials=args.trials,
            guarantee=args.guarantee,
            emit=args.emit,
            max_records=args.max_records_per_batch,
            seed=args.seed,
            log=log,
            append_per_trial=args.append_per_trial,
            corrupt=args.corrupt,
        )
    check(root, report)
    report.seconds = time.monotonic() - started
    print(report.summary())
    result = asdict(report)
    result["kills"] = dict(report.kills)
    result["corruptions"] = dict(report.corruptions)
    (Path(root) / "harness-report.json").write_text(json.dumps(result, indent=2))
    return 1 if (report.violations and args.guarantee == "exactly_once") else 0


if __name__ == "__main__":
    sys.exit(main())
