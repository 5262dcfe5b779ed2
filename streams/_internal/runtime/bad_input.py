"""What an application does with input that breaks the contract for external writers
(:mod:`deltastreams.sinks._internal.input_read`): dead letters, or a stop that names the way out.

With ``on_bad_record = "dlq"`` (the default) every such record becomes a dead letter of the task
that reads its partition (a file with a null partition: the task of partition 0), written and
committed with the batch that consumes its version, so exactly once across crashes like any
output. The reason names the topic, the version and the file. A file that cannot be read gives one
dead letter for the file (its rows are not there to show). With ``"fail"`` the application stops
before the version, naming the file and two ways on: ``skip`` (the application moves past the file,
keeping its state: :mod:`deltastreams.streams.skip`), or removing the file's rows and starting again.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from deltastreams.conf.errors import ExternalAppendError
from deltastreams.sinks import BadInput
from deltastreams.streams._internal.processing.flow import to_json_text
from deltastreams.streams._internal.processing.task import DEAD_LETTER_SCHEMA, DEAD_LETTER_VALUE

log = logging.getLogger("deltastreams")


@dataclass(frozen=True)
class BadInputReport:
    """What a task set apart, as it travels back to the driver (JSON-able)."""

    topic: str
    version: int | None
    path: str
    reason: str
    records: int
    readable: bool

    @classmethod
    def of(cls, bad: BadInput) -> BadInputReport:
        return cls(bad.topic, bad.version, bad.path, bad.reason, bad.records, bad.rows is not None)


def dead_letters(bad: Sequence[BadInput], *, key_column: str, node: str, task: str) -> pa.Table:
    """One dead letter per record of ``bad`` (one per file that cannot be read): the record as
    its writer wrote it (JSON), where it came from, and why it could not be taken."""
    keys, values, topics, partitions, offsets, stamps, reasons = [], [], [], [], [], [], []
    for item in bad:
        reason = item.describe()
        rows = item.rows.to_pylist() if item.rows is not None else [None]
        for row in rows:
            row = {k: v for k, v in row.items() if k != "partition"} if row is not None else None
            keys.append(to_json_text(row.get(key_column)) if row is not None else None)
            values.append(to_json_text(row) if row is not None else None)
            topics.append(item.topic)
            partitions.append(item.partition)
            offsets.append(row.get("offset") if row is not None and item.first_offset is not None else item.first_offset)
            stamp = row.get("timestamp") if row is not None else None
            stamps.append(stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else 0)
            reasons.append(reason)
    n = len(keys)
    value = pa.StructArray.from_arrays(
        [
            pa.array(values, pa.string()),
            pa.array(topics, pa.string()),
            pa.array(partitions, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array([node] * n, pa.string()),
            pa.array([task] * n, pa.string()),
            pa.array(reasons, pa.string()),
        ],
        fields=list(DEAD_LETTER_VALUE),
    )
    return pa.table({"timestamp": pa.array(stamps, pa.int64()), "key": pa.array(keys, pa.string()), "value": value}, schema=DEAD_LETTER_SCHEMA)


def skip_command(root: str, application_id: str, topic: str, version: int | None, path: str | None) -> str:
    """The command that moves the application past a file (or a whole version)."""
    words = ["python", "-m", "deltastreams.jobs.skip", "--root", root, "--application-id", application_id, "--topic", topic, "--version", str(version)]
    return shlex.join(words + (["--file", path] if path is not None else []))


def stop_error(root: str, application_id: str, topic: str, uri: str, version: int | None, path: str, reason: str) -> ExternalAppendError:
    """The error that stops an application (``on_bad_record = "fail"``) before bad input."""
    skip = skip_command(root, application_id, topic, version, path)
    return ExternalAppendError(
        f"input topic '{topic}' version {version}, file {path}: {reason}",
        uri=uri,
        path=path,
        version=version,
        reason=reason,
        topic=topic,
        action=(
            f"move past that file, keeping the application's state: `{skip}` (its records are not processed; `status` shows the "
            "skip), or remove its rows from the topic (a DELETE with delta-rs or delta-spark that removes that file), or fix the "
            "file; then start the job again. To send such records to the dead-letter topic instead: on_bad_record = dlq"
        ),
    )


def say_dead_lettered(reports: Sequence[BadInputReport], dead_letter_topic: str) -> None:
    """One warning per file set apart (the console shows them: nothing goes by unnoticed)."""
    for r in reports:
        count = ("its record" if r.records == 1 else f"its {r.records:,} records") if r.readable else "a dead letter for the file"
        log.warning("input %s version %s, file %s: %s; %s went to the dead-letter topic %s", r.topic, r.version, r.path, r.reason, count, dead_letter_topic)
