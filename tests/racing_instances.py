"""Two instances of one application racing on one root: the first crawls (many small batches) so
it is still busy when the second starts and catches up in big batches. The second must fence the
first, which stops saying it was fenced (ProducerFencedError, its trace in the log file), and the output must stay exactly once (checked by
the crash harness's checks, which share no code with the job)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from deltastreams.devtools.harness import crash as crash_harness
from deltastreams.sinks import table_exists
from deltastreams.sinks.transaction import TransactionLog


def race(root: str, logs: Path, *, state_dirs: tuple[Path, Path] | None = None) -> tuple[int, str]:
    """Runs both instances to their end; returns the first one's exit code and its output.
    ``state_dirs``: each instance's own local state (as on two machines); default: the root's."""
    crash_harness.append_events(root, 20_000, seed=13, appends=40)
    first_state, second_state = state_dirs or (None, None)
    slow = crash_harness.job_command(root, "exactly_once", "revisions", 500, commit_interval_ms=2500, state_dir=first_state)
    fast = crash_harness.job_command(root, "exactly_once", "revisions", 100_000, state_dir=second_state)
    env = {k: v for k, v in os.environ.items() if k != "DELTASTREAMS_CRASH_AT"}
    logs.mkdir(parents=True, exist_ok=True)
    first_log, second_log = open(logs / "first.log", "w"), open(logs / "second.log", "w")
    first = subprocess.Popen(slow, stdout=first_log, stderr=first_log, env=env, start_new_session=True)
    second = None
    try:
        txlog_uri = f"{root}/transactions/pageview/subtopology-0"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # wait until the first instance has decided a few batches
            decided = TransactionLog(txlog_uri, "probe").last_decided() if table_exists(txlog_uri) else None
            if decided is not None and decided.seq >= 1:
                break
            assert first.poll() is None, (logs / "first.log").read_text()[-3000:]
            time.sleep(0.5)
        second = subprocess.Popen(fast, stdout=second_log, stderr=second_log, env=env, start_new_session=True)
        assert second.wait(timeout=600) == 0, (logs / "second.log").read_text()[-3000:]
        first_code = first.wait(timeout=120)
    finally:
        for process in (first, second):
            if process is not None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        first_log.close()
        second_log.close()
    return first_code, (logs / "first.log").read_text()


def assert_fenced(first_code: int, output: str) -> None:
    """The zombie exits with 1 and its terminal says it was fenced and what to do; the error and its
    trace are in the log file the terminal names (the terminal has no Spark traces any more)."""
    assert first_code == 1, output[-3000:]
    assert "was fenced" in output and "what to do: another instance of this application took over" in output, output[-3000:]
    details = [line.removeprefix("details: ") for line in output.splitlines() if line.startswith("details: ")]
    assert details and "ProducerFencedError" in Path(details[-1]).read_text(), output[-3000:]
