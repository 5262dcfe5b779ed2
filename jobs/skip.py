"""Move a stopped application past a file of an input topic that breaks the contract for external
writers, keeping its state (:mod:`deltastreams.streams.skip`; Kafka users move their group's committed
offset past a poison record):

    python -m deltastreams.jobs.skip --root /tmp/pv --application-id pageview --topic pageview-events --version 7 \\
        --file 'partition=__HIVE_DEFAULT_PARTITION__/part-00000-....snappy.parquet'

An application stopped by bad input (``on_bad_record = "fail"``) prints this command with its
arguments. Without ``--file``, every file of the version is skipped. The application must be stopped
(it refuses while an instance's heartbeat is fresh; ``--force`` for one known dead). Killed in the
middle, run the same command again. ``status`` lists the skips. See docs/bad-input.md.
"""

from __future__ import annotations

import sys

from deltastreams.jobs.cli import main_for


def main(argv: list[str] | None = None) -> int:
    return main_for("skip", argv, prog="python -m deltastreams.jobs.skip", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
