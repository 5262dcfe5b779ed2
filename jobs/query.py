"""A store's committed state, read-only, for any application under a root
(:mod:`deltastreams.streams.query`), as CSV with a header; the batch it is as of goes to stderr.

    python -m deltastreams.jobs.query --root /tmp/pv --application-id pageview [--store S] [--key K] [--from T --to T]
    python -m deltastreams.jobs.query --root /tmp/uc --application-id mine --topology mypkg.app:build_topology --from-key a --to-key m
"""

from __future__ import annotations

import sys

from deltastreams.jobs.cli import main_for


def main(argv: list[str] | None = None) -> int:
    return main_for("query", argv, prog="python -m deltastreams.jobs.query", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
