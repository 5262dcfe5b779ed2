"""Moving a stopped application past a file of an input topic, keeping its state (Kafka users
skip a poison record by moving their group's committed offset past it):
``python -m deltastreams.jobs.skip --root R --application-id A --topic T --version V [--file F]``.

An application that stops on bad input (``on_bad_record = "fail"``) names the file and this
command. Positions are whole Delta versions, and the version may hold good files beside the bad
one, so the skip names the file (without ``--file``: every file of the version). The application
then reads that version without it: the file's records are neither processed nor dead-lettered,
and nothing else changes (stores, positions, outputs). ``status`` lists the skips.

How it is recorded: in the transaction log of every sub-topology of the application, as a property
set by a decided batch of its own (:mod:`deltastreams.streams._internal.runtime.skips`). Per log:
1. Checks: the application ran, no reset or rescale is unfinished, no instance holding it is alive
   (its heartbeat, as ``status`` judges it; ``force`` for one known dead), the topic is one of its
   input topics, the version exists and is not consumed yet by every reader, the file is one the
   version added.
2. Register a new epoch (fencing any instance still alive: its next commit fails) and roll the last
   decided batch forward, as a start does.
3. Decide a batch that publishes nothing, keeps every position, and sets the property: the skip's
   one point of no return per log, atomic with the batch.
A kill -9 anywhere leaves each log with the skip or without it; running the command again records
it where it is missing (a log that has it is left alone). An application started in between reads
the union of its logs' skips, so it skips the file already.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.sinks import open_table, read_commit, read_version, table_exists, topic_uri
from deltastreams.sinks.transaction import DecidedBatch, TransactionLog, decided_entry
from deltastreams.streams._internal.runtime import rescale_marker, reset_marker, skips
from deltastreams.streams._internal.runtime.crashpoints import crash_point
from deltastreams.streams.status import logged_subtopologies, refuse_while_running, transaction_log_uri

log = logging.getLogger("deltastreams")


class SkipError(DeltaStreamsError):
    """The skip was refused; nothing changed. The message says why and what to do."""


@dataclass
class SkipReport:
    application_id: str
    skip: skips.Skip
    recorded: dict[int, int] = field(default_factory=dict)
    """Per sub-topology whose log now holds the skip: the seq of the batch that recorded it."""
    already: list[int] = field(default_factory=list)
    """Sub-topologies whose logs held it already (a rerun after a crash)."""
    seconds: float = 0.0


def skip(config: StreamsConfig, topic: str, version: int, file: str | None = None, *, force: bool = False) -> SkipReport:
    """Record that ``config.application_id`` skips ``file`` (None: every file) of version
    ``version`` of its input topic ``topic`` (see the module docstring)."""
    started = time.perf_counter()
    root, app = config.root, config.application_id
    # Step 1
    subs = [s for s in logged_subtopologies(config) if table_exists(transaction_log_uri(root, app, s))]
    if not subs:
        raise SkipError(f"application {app!r} has never run under {root} (no transaction log under {root}/transactions/{app}): nothing to skip")
    if reset_marker.read_plan(root, app) is not None:
        raise SkipError(f"application {app} has an unfinished reset: run the reset again to finish it, then skip")
    if "://" not in root and rescale_marker.read_plan(root, app) is not None:
        raise SkipError(f"application {app} has an unfinished rescale: run deltastreams.jobs.rescale again to finish it, then skip")
    refuse_while_running(config, subs, "skip", SkipError, force)
    uri = _input_topic_uri(config, subs, topic)
    reason = _check_version(config, subs, topic, uri, version, file)
    wanted = skips.Skip(topic, version, file, int(time.time() * 1000), reason)
    report = SkipReport(app, wanted)
    instance = f"skip-{uuid.uuid4().hex[:8]}"
    for count, sub in enumerate(subs):
        txlog = TransactionLog(transaction_log_uri(root, app, sub), f"{app}/subtopology-{sub}")
        held = skips.parse(txlog.property(skips.PROPERTY))
        if any((s.topic, s.version, s.file) == (topic, version, file) for s in held):
            report.already.append(sub)
            continue
        # Step 2
        txlog.register(instance)
        last = txlog.last_decided()
        if last is not None and last.exactly_once:
            txlog.publish(last, lambda _topic, table_uri: open_table(table_uri))
        if count == 0:
            crash_point("skip_after_fence")
        # Step 3
        txlog.keep_with_next_decision({skips.PROPERTY: skips.render(skips.merged(held, [wanted]))})
        positions = {t: (end, end) for t, (_, end) in (last.sources.items() if last is not None else ())}
        seq = last.seq + 1 if last is not None else 0
        txlog.decide(DecidedBatch(seq=seq, epoch=txlog.epoch, sources=positions, tables={}, exactly_once=last.exactly_once if last is not None else config.exactly_once))
        report.recorded[sub] = seq
        if count == 0:
            crash_point("skip_after_decide")
    report.seconds = time.perf_counter() - started
    log.info("application %s skips %s", app, wanted.describe())
    return report


def _input_topic_uri(config: StreamsConfig, subs: list[int], topic: str) -> str:
    """The topic's table: an input topic the application reads (its transaction logs name it), or
    one under the root it has not read yet."""
    read = {t for s in subs for t in _positions(config, s)}
    if topic in config.kafka.source_topics:
        raise SkipError(f"input topic '{topic}' is in Kafka: its positions are offsets, which skip does not move (reset does)")
    uri = topic_uri(config.root, topic)
    if not table_exists(uri):
        known = ", ".join(sorted(t for t in read if not t.endswith("-repartition"))) or "none yet"
        raise SkipError(f"topic '{topic}' does not exist under {config.root}/topics (input topics {config.application_id} has read: {known})")
    return uri


def _positions(config: StreamsConfig, sub: int) -> dict[str, object]:
    """Where a sub-topology's last decided batch left its inputs (read-only)."""
    uri = transaction_log_uri(config.root, config.application_id, sub)
    for v in range(open_table(uri).version(), 0, -1):
        actions = read_commit(uri, v)
        batch = decided_entry(actions) if actions is not None else None
        if actions is None or batch is not None:
            return {t: end for t, (_, end) in batch.sources.items()} if batch is not None else {}
    return {}


def _check_version(config: StreamsConfig, subs: list[int], topic: str, uri: str, version: int, file: str | None) -> str:
    """Refuse what cannot be skipped; the reason the application would give for the file."""
    latest = open_table(uri).version()
    if not 0 <= version <= latest:
        raise SkipError(f"topic '{topic}' has versions 0 to {latest}: there is no version {version}")
    positions = [p for s in subs for t, p in _positions(config, s).items() if t == topic and isinstance(p, int)]
    if positions and min(positions) >= version:
        raise SkipError(f"application {config.application_id} has consumed '{topic}' up to version {min(positions)} already: version {version} is behind it, nothing to skip")
    read = read_version(uri, version)
    paths = [f.path for f in read.files] + [r.path for r in read.rejected]
    if file is not None and file not in paths:
        raise SkipError(f"version {version} of '{topic}' added no file {file}; the files it added: {paths or 'none'}")
    reasons = [r.reason for r in read.rejected if file is None or r.path == file]
    return reasons[0] if reasons else "asked for"


__all__ = ["SkipError", "SkipReport", "skip"]
