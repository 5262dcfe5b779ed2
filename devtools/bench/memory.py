"""Peak memory of the pageview job run on its own: driver, JVM and Python workers together.

    python -m deltastreams.jobs.pageview generate --root /tmp/pv5m --events 5000000 --batches 5
    python -m deltastreams.devtools.bench.memory --root /tmp/pv5m --until-caught-up --max-records-per-batch 1000000

Every argument goes to ``python -m deltastreams.jobs.pageview run``. ``deltastreams.devtools.bench.suite`` reports peak memory too,
but its process also hosts the plain-Spark runs, whose JVM heap does not shrink afterwards; this
measures the job alone, as it would run in production.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from deltastreams.devtools.bench.suite import MemorySampler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deltastreams.devtools.bench.memory", usage="%(prog)s [-h] RUN_ARGUMENTS...",
        description="Peak memory of `python -m deltastreams.jobs.pageview run RUN_ARGUMENTS...` (driver, JVM and Python workers together).",
    )
    _, run_args = parser.parse_known_args(argv)
    sampler = MemorySampler()
    sampler.start()
    started = time.monotonic()
    exit_code = subprocess.call([sys.executable, "-m", "deltastreams.jobs.pageview", "run", *run_args], stdout=subprocess.DEVNULL)
    sampler.running = False
    sampler.join()
    print(f"peak memory {sampler.peak_mb:,.0f} MB (process tree), {time.monotonic() - started:.1f} s, exit code {exit_code}")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
