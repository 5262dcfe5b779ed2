"""Start-up of the pageview job, phase by phase: launch to the first committed batch, on a fresh
root and again after a kill -9, alternating with another checkout (``--baseline``) under the same
load.

    python -m deltastreams.devtools.bench.startup --reps 3
    python -m deltastreams.devtools.bench.startup --reps 3 --baseline /tmp/speed-base   # a checkout of main, for "before"

Each run is ``python -m deltastreams.jobs.pageview run`` as a user starts it (embedded local Spark,
2,000 events). Its console lines are stamped as they arrive, which gives the phases:
- ``imports``: launch to the log file's line (Python start, imports, the command line);
- ``registered``: to the sub-topologies' registration (checks, recovery of the transaction logs;
  before the background start, the Spark session too);
- ``first batch``: to the first committed batch (task hosts, store restore, the batch);
- ``started``: to the query running (the application's own line, with its phases); or
  ``caught up``: a run until caught up that consumed its input before its Spark session was up
  ends there, without a query.
The kill -9 case starts the job without ``--until-caught-up``, kills the driver with SIGKILL once its
first batch is committed, appends 2,000 more events and times the restart (recovery, restore).
The load average is printed with every run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

EVENTS = 2000
_BATCH = re.compile(r"sub-topology \d+ batch -?\d+: ")


@dataclass
class Run:
    checkout: str
    case: str
    load: float
    marks: dict[str, float] = field(default_factory=dict)
    started_line: str = ""

    def line(self) -> str:
        marks = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.marks.items())
        return f"  {self.checkout:8} {self.case:10} load {self.load:4.1f}: {marks}"


THIS_CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Checkout:
    """Where a run's processes take deltastreams from: its folder first on the path, and their
    working directory. (``python -m`` puts the working directory before PYTHONPATH: a baseline
    run from this checkout's folder ran this checkout's code, until 2026-11-29.)"""

    folder: Path

    @property
    def process_args(self) -> dict:
        """The ``subprocess`` arguments of every process of a run."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.folder), env.get("PYTHONPATH", "")) if p)
        return {"env": env, "cwd": self.folder}

    def as_set_up(self) -> None:
        """Its modules' bytecode written, if its ``bin/setup`` writes it (since 2026-11-29; a
        checkout made for a baseline has none, and compiling them took ~0.5 s of each start)."""
        setup = self.folder / "bin" / "setup"
        if setup.exists() and "compileall" in setup.read_text():
            folders = sorted(p.name for p in self.folder.iterdir() if (p / "__init__.py").exists())  # its packages, whatever they are then
            subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *folders], cwd=self.folder, check=True, stdout=subprocess.DEVNULL)

    def require_own_code(self) -> None:
        found = subprocess.run(
            [sys.executable, "-c", "import deltastreams.jobs.pageview as p; print(p.__file__)"], **self.process_args, check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        if not Path(found).resolve().is_relative_to(self.folder.resolve()):
            raise SystemExit(f"a run meant for {self.folder} imports deltastreams from {found}")


def _generate(checkout: Checkout, root: Path, seed: int) -> None:
    subprocess.run([sys.executable, "-m", "deltastreams.jobs.pageview", "generate", "--root", str(root), "--events", str(EVENTS), "--seed", str(seed)],
                   **checkout.process_args, check=True, capture_output=True)  # fmt: skip


def _launch(checkout: Checkout, root: Path, *, until_caught_up: bool, stop_after_first_batch: bool, timeout_s: float) -> tuple[dict[str, float], str]:
    """Runs the job; returns seconds from launch to each mark and the application's start line."""
    command = [sys.executable, "-m", "deltastreams.jobs.pageview", "run", "--root", str(root)] + (["--until-caught-up"] if until_caught_up else [])
    launched = time.perf_counter()
    process = subprocess.Popen(command, **checkout.process_args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    marks: dict[str, float] = {}
    started_line = ""
    killer = threading.Timer(timeout_s, process.kill)
    killer.start()
    try:
        for line in process.stderr:
            at = time.perf_counter() - launched
            if "INFO log file:" in line:
                marks.setdefault("imports", at)
            elif " registered with epoch " in line:
                marks.setdefault("registered", at)
            elif _BATCH.search(line) and "first batch" not in marks:
                marks["first batch"] = at
                if stop_after_first_batch:
                    os.kill(process.pid, signal.SIGKILL)
                    break
            elif "INFO application pageview started in" in line:
                marks["started"] = at
                started_line = line.split("INFO ", 1)[1].strip()
            elif "INFO application pageview caught up in" in line:  # before its Spark session was up: no query
                marks["caught up"] = at
                started_line = line.split("INFO ", 1)[1].strip()
        process.wait()
        if not stop_after_first_batch:
            marks["exit"] = time.perf_counter() - launched
    finally:
        killer.cancel()
    return marks, started_line


def measure(name: str, checkout: Checkout, base: Path, rep: int, timeout_s: float) -> list[Run]:
    runs = []
    fresh = base / f"{name}-{rep}-fresh"
    _generate(checkout, fresh, seed=rep)
    run = Run(name, "fresh", os.getloadavg()[0])
    run.marks, run.started_line = _launch(checkout, fresh, until_caught_up=True, stop_after_first_batch=False, timeout_s=timeout_s)
    runs.append(run)
    killed = base / f"{name}-{rep}-kill9"
    _generate(checkout, killed, seed=rep)
    _launch(checkout, killed, until_caught_up=False, stop_after_first_batch=True, timeout_s=timeout_s)
    time.sleep(2)  # the killed driver's JVM and task hosts notice and exit (they watch it)
    _generate(checkout, killed, seed=rep + 1000)
    run = Run(name, "after -9", os.getloadavg()[0])
    run.marks, run.started_line = _launch(checkout, killed, until_caught_up=True, stop_after_first_batch=False, timeout_s=timeout_s)
    runs.append(run)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout of deltastreams (e.g. of main) to run alternately, as 'before'")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    base = Path(args.work_dir or tempfile.mkdtemp(prefix="deltastreams-bench-startup-"))
    checkouts = [("this", Checkout(THIS_CHECKOUT))] + ([("baseline", Checkout(args.baseline.resolve()))] if args.baseline else [])
    for _, checkout in checkouts:
        checkout.as_set_up()
        checkout.require_own_code()
    runs: list[Run] = []
    print(f"pageview job, {EVENTS:,} events, launch to each mark; {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}", flush=True)
    for rep in range(args.reps):
        for name, checkout in checkouts if rep % 2 == 0 else list(reversed(checkouts)):
            for run in measure(name, checkout, base, rep, args.timeout_s):
                runs.append(run)
                print(run.line(), flush=True)
                if run.started_line:
                    print(f"      {run.started_line}", flush=True)
    print("best launch to first committed batch:")
    for name, _ in checkouts:
        for case in ("fresh", "after -9"):
            firsts = [r.marks["first batch"] for r in runs if r.checkout == name and r.case == case and "first batch" in r.marks]
            if firsts:
                print(f"  {name:8} {case:10} {min(firsts):.2f} s (of {', '.join(f'{s:.2f}' for s in firsts)})")
    if not args.work_dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
