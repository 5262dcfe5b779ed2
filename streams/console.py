"""What an application shows while it runs: a line per micro-batch on the console, details in a log
file, and a failure said in three lines.

A :class:`~deltastreams.streams.StreamsApp` sets this up itself when it starts (``loglevel``,
``log_file``), in a program of its user's as on a command line; ``loglevel=None`` leaves logging to
the program. The console gets the application's own lines (one per micro-batch, the start, the
stop); everything else (DEBUG lines, per-phase timings, Spark's and Python's stack traces, Spark's
own log4j log and what its Python workers print: :mod:`deltastreams.streams._internal.spark.spark_log`)
goes to the log file, whose path is logged at start and again when something fails:

    error: a disk is full (No space left on device) while writing /data/topics/...
    what to do: free space on that disk (...), then start the job again: it resumes after its last committed batch
    details: /data/state/pageview/logs/pageview-20261123T010203.log

:func:`run_from_terminal` is the command line's ``run`` (:mod:`deltastreams.streams.command_line`):
the same, for a process that is the application's alone, plus SIGTERM and Ctrl-C stopping it
between micro-batches (exit code 0), not in the middle of one, and an exit code instead of an
exception.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from pathlib import Path

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.streams._internal.runtime.failures import Failure
from deltastreams.streams._internal.runtime.graceful_stop import StopOnSignal, StopSignal, calling_on_stop_signals
from deltastreams.streams.errors import ApplicationFailedError

__all__ = ["calling_on_stop_signals", "default_log_file", "failure_of", "log_to", "run_from_terminal", "say_failure"]

_FORMAT = "%(asctime)s %(levelname)s %(message)s"
_CONSOLE_LOGGERS = ("deltastreams", "deltastreams.failure")
"""The application's own messages; the modules' loggers (deltastreams.state.task_stores, ...)
write to the log file only."""
_FALLBACK_ACTION = "fix what the message names, then start the application again"


def default_log_file(config: StreamsConfig) -> Path:
    """``<state_dir>/<application_id>/logs/<application_id>-<start time>.log``."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return Path(config.local_state_dir).absolute() / config.application_id / "logs" / f"{config.application_id}-{stamp}.log"


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record comes (as logging's last-resort handler
    does), so that a replaced stderr (a test's capture, a redirected program) never gets a stale
    stream."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def log_to(log_file: Path, *, level: int | str = "INFO", whole_process: bool = False) -> None:
    """The console gets the application's lines at ``level`` and above, ``log_file`` everything
    at DEBUG. ``whole_process`` (a command line, whose process is the application's): every
    logger of the process writes to the file (the root logger's handlers are replaced) and Python's
    warnings go there too. Otherwise (a program of the user's) only the ``deltastreams`` loggers
    are given handlers, which no longer propagate to the program's own. A later call (the next
    application in the same process) replaces the handlers an earlier one added."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    root, ours = logging.getLogger(), logging.getLogger("deltastreams")
    for logger in (root, ours):
        for handler in [h for h in logger.handlers if getattr(h, "_deltastreams", False)]:
            logger.removeHandler(handler)
            handler.close()
    to_file = logging.FileHandler(log_file)
    to_file.setFormatter(logging.Formatter(_FORMAT))
    to_file.setLevel(logging.DEBUG)
    console = _Stderr()
    console.setFormatter(logging.Formatter(_FORMAT))
    console.setLevel(level)
    console.addFilter(lambda record: record.name in _CONSOLE_LOGGERS)
    for handler in (to_file, console):
        handler._deltastreams = True
    if whole_process:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.setLevel(logging.DEBUG)
        ours.setLevel(logging.NOTSET)
        ours.propagate = True
        target = root
        logging.getLogger("py4j").setLevel(logging.WARNING)
        logging.captureWarnings(True)  # Python warnings (PySpark's among them) to the file, not the terminal
    else:
        ours.setLevel(logging.DEBUG)
        ours.propagate = False
        target = ours
    target.addHandler(to_file)
    target.addHandler(console)


def failure_of(error: BaseException) -> Failure:
    """What failed and what to do, for any error a run or a start raises."""
    if isinstance(error, ApplicationFailedError):
        return error.failure
    if isinstance(error, DeltaStreamsError):
        return Failure(str(error), getattr(error, "action", None) or _FALLBACK_ACTION)
    return Failure(f"unexpected {type(error).__name__}: {error}", "this is a bug in deltastreams or its setup; the log file has the traceback")


def say_failure(error: BaseException, log_file: str | Path | None) -> str:
    """The three lines that say a failure; the full error (Spark's details, or the traceback) goes
    to the log file first."""
    details = error.details if isinstance(error, ApplicationFailedError) else "".join(traceback.format_exception(error))
    logging.getLogger("deltastreams.failure").debug("%s", details)
    failure = failure_of(error)
    return f"error: {failure.what}\nwhat to do: {failure.action}\ndetails: {log_file}"


def run_from_terminal(app, *, until_caught_up: bool = False, timeout_s: float | None = None, log_file: Path | None = None) -> int:
    """Run ``app`` (a :class:`~deltastreams.streams.StreamsApp`) until stopped (SIGTERM, Ctrl-C),
    caught up or failed; returns the process exit code. The process is the application's: its
    logging is set up for it, and its Spark session is stopped at the end."""
    app.log_to(log_file or default_log_file(app.config), whole_process=True)
    stopper = StopOnSignal()
    stopped_by = None
    try:
        stopper.install()
        app.start(until_caught_up=until_caught_up)
        stopper.install()  # again: the SparkContext replaced the SIGINT handler
        if stopper.arm():  # the signal came during the start-up
            stopped_by = stopper.received
            app.stop()
        else:
            app.run(until_caught_up=until_caught_up, timeout_s=timeout_s)
    except StopSignal as stop:
        stopped_by = stop.name  # run() stopped the application on its way out
    except Exception as e:  # noqa: BLE001 - a failure is said in three lines here, the rest goes to the file
        print(say_failure(e, app.log_file), file=sys.stderr)
        return 1
    finally:
        stopper.disarm()
        app.close_spark(exiting=True)
    ended = f"stopped on {stopped_by}: " if stopped_by else ""
    print(f"{ended}{app.progress.summary()}", file=sys.stderr)
    return 0
