"""Compact an application's changelog topics once, while it is stopped.

    python -m deltastreams.jobs.compact --root DIR --application-id pageview [--tombstone-retention-ms MS]

A running application compacts its changelogs itself (``[retention]`` settings); this is the
same step (:func:`deltastreams.sinks.retention.compact_changelog`) for a stopped one, e.g. before copying its
data. Do not run it against a running application: its next commit to the changelog would find
a version it did not write and stop the job.
"""

from __future__ import annotations

import sys

from deltastreams.jobs.cli import main_for


def main(argv: list[str] | None = None) -> int:
    return main_for("compact", argv, prog="python -m deltastreams.jobs.compact", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
