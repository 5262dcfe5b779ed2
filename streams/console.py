"""Running an application from a terminal: progress on the console, details in a log file, and a
failure said in three lines.

    from deltastreams.streams.console import run_from_terminal
    sys.exit(run_from_terminal(app, until_caught_up=True))

SIGTERM and Ctrl-C stop the application between micro-batches (exit code 0), not in the middle
of one. The console gets one line per micro-batch and a final summary. Everything else (DEBUG lines,
per-phase timings, Spark's and Python's stack traces, Spark's own log4j log and what its Python
workers print: :mod:`deltastreams.streams._internal.spark.spark_log`) goes to the log file, whose path is printed
at start and again when something fails:

    error: a disk is full (No space left on device) while writing /data/topics/...
    what to do: free space on that disk (...), then start the job again: it resumes after its last committed batch
    details: /data/state/pageview/logs/pageview-20261123T010203.log
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from pathlib import Path

from deltastreams.conf.errors import DeltaStreamsError
from deltastreams.streams._internal.runtime.graceful_stop import StopOnSignal, StopSignal, calling_on_stop_signals
from deltastreams.streams.app import ApplicationFailedError, StreamsApp

__all__ = ["calling_on_stop_signals", "default_log_file", "run_from_terminal", "setup_logging"]

_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def default_log_file(app: StreamsApp) -> Path:
    return Path(app.config.local_state_dir).absolute() / app.config.application_id / "logs" / f"{app.config.application_id}-{time.strftime('%Y%m%dT%H%M%S')}.log"


def setup_logging(log_file: Path) -> None:
    log_file.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    to_file = logging.FileHandler(log_file)
    to_file.setFormatter(logging.Formatter(_FORMAT))
    to_file.setLevel(logging.DEBUG)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter(_FORMAT))
    console.setLevel(logging.INFO)
    # The application's own messages ("deltastreams", "deltastreams.failure"); the modules' loggers
    # (deltastreams.state.task_stores, ...) write to the file only.
    console.addFilter(lambda record: record.name in ("deltastreams", "deltastreams.failure"))
    root.addHandler(to_file)
    root.addHandler(console)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    logging.captureWarnings(True)  # Python warnings (PySpark's among them) to the file, not the terminal


def run_from_terminal(app: StreamsApp, *, until_caught_up: bool = False, timeout_s: float | None = None, log_file: Path | None = None) -> int:
    """Run ``app`` until stopped (Ctrl-C), caught up or failed; returns the process exit code."""
    log_file = log_file or default_log_file(app)
    setup_logging(log_file)
    app.log_file = str(log_file)
    logging.getLogger("deltastreams").info("log file: %s", log_file)
    stopper = StopOnSignal()
    stopped_by = None
    try:
        stopper.install()
        app.start()
        stopper.install()  # again: the SparkContext replaced the SIGINT handler
        if stopper.arm():  # the signal came during the start-up
            stopped_by = stopper.received
            app.stop()
        else:
            app.run(until_caught_up=until_caught_up, timeout_s=timeout_s)
    except StopSignal as stop:
        stopped_by = stop.name  # run() stopped the application on its way out
    except ApplicationFailedError as e:
        logging.getLogger("deltastreams.failure").debug("%s", e.details)
        _say(e.failure.what, e.failure.action, log_file)
        return 1
    except DeltaStreamsError as e:
        logging.getLogger("deltastreams.failure").debug("%s", traceback.format_exc())
        _say(str(e), getattr(e, "action", None) or "fix what the message names, then start the job again", log_file)
        return 1
    except Exception as e:  # noqa: BLE001 - anything else: one line here, the traceback in the file
        logging.getLogger("deltastreams.failure").debug("%s", traceback.format_exc())
        _say(f"unexpected {type(e).__name__}: {e}", "this is a bug in deltastreams or its setup; the log file has the traceback", log_file)
        return 1
    finally:
        stopper.disarm()
        app.close_spark()
    totals = app.progress.totals
    ended = f"stopped on {stopped_by}: " if stopped_by else ""
    print(
        f"{ended}processed {totals['records_in']:,} records in {totals['batches']} batches; {totals['dropped_late']:,} late dropped, "
        f"{totals['dead_letters']:,} to the DLQ",
        file=sys.stderr,
    )
    return 0


def _say(what: str, action: str, log_file: Path) -> None:
    print(f"error: {what}\nwhat to do: {action}\ndetails: {log_file}", file=sys.stderr)
