"""Reset any application under a root to reprocess its input (Kafka's
``kafka-streams-application-reset``; :mod:`deltastreams.streams.reset`): move every input topic's position,
delete the internal topics, changelogs and local state; output topics are kept.

    python -m deltastreams.jobs.reset --root /tmp/pv --application-id pageview --to-earliest
    python -m deltastreams.jobs.reset --root /tmp/pv --application-id pageview --to-timestamp 2026-11-26T10:00:00Z
    python -m deltastreams.jobs.reset --root /tmp/pv --application-id pageview --to-version pageview-events=3

The application must be stopped (it refuses while an instance's heartbeat is fresh; ``--force``
for one known dead). Killed in the middle, run the same command again: it finishes; the
application refuses to start until then. See docs/operations.md.
"""

from __future__ import annotations

import sys

from deltastreams.jobs.cli import main_for


def main(argv: list[str] | None = None) -> int:
    return main_for("reset", argv, prog="python -m deltastreams.jobs.reset", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
