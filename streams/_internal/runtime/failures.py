"""What a person needs when a job fails: what failed, which file or table, and what to do.

An error that crossed Spark arrives as pages of JVM and Python stack traces with the useful line
somewhere inside. :func:`explain` finds it and names the usual causes (a full disk, an unreadable
input file, a lost executor, a second instance) with the action that fixes them; the stack traces
belong in the log file, not on the terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.*)$")
_WRAPPERS = ("Py4JJavaError", "PythonException", "StreamingQueryException", "SparkException", "TaskHostError", "ForeachBatchUserFuncException")
_PATH = re.compile(r"(/[\w.\-/=]+)")
_RESUMES = "start the job again: it resumes after its last committed batch"


@dataclass(frozen=True)
class Failure:
    what: str
    """One line: what failed, naming the file, table or process involved."""
    action: str
    """What to do about it."""


def root_cause(text: str) -> str:
    """The last 'SomethingError: message' line of an error that crossed Spark (Py4J, Python
    workers, task hosts), so users see our message rather than a JVM stack trace."""
    found = [m for m in (_ERROR_LINE.match(line.strip()) for line in text.splitlines()) if m]
    ours = [m for m in found if m.group(1) not in _WRAPPERS]
    if ours:
        return f"{ours[-1].group(1)}: {ours[-1].group(2)}"
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def explain(text: str) -> Failure:
    cause = root_cause(text)
    lowered = text.lower()
    if "no space left on device" in lowered or "errno 28" in lowered or "enospc" in lowered:
        where = next((m.group(1) for line in text.splitlines() if "no space left" in line.lower() for m in [_PATH.search(line)] if m), None)
        return Failure(
            f"a disk is full (No space left on device){f' while writing {where}' if where else ''}",
            "free space on that disk (topics under the root, RocksDB state under state_dir, Spark's temporary files "
            f"under spark.local.dir), then {_RESUMES}",
        )
    if cause.startswith("UnreadableFileError"):
        return Failure(
            cause.split(": ", 1)[1],
            "restore the file from a backup, or remove it from the topic's Delta log if its records are lost anyway; then "
            + _RESUMES,
        )
    if cause.startswith("ProducerFencedError"):
        return Failure(cause.split(": ", 1)[1], "another instance of this application took over: stop one of the two")
    lost = ("executorlostfailure", "python worker exited unexpectedly", "task host closed the connection", "worker lost", "crashed")
    if any(marker in lowered for marker in lost):
        return Failure(
            f"an executor or one of its Python processes died ({cause})",
            "check that executor's log (memory is the usual cause: raise spark.executor.memory or lower "
            f"max_records_per_batch), then {_RESUMES}",
        )
    return Failure(cause, f"the stack traces are in the log file; {_RESUMES}")
