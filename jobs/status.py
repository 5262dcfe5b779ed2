"""The status of any application under a root, read-only (:mod:`deltastreams.streams.status`): per
sub-topology its last committed batch, lag against its input topics, the instance holding it and
whether it is alive, its stores; retention's last runs.

    python -m deltastreams.jobs.status --root /tmp/pv --application-id pageview [--json]
    python -m deltastreams.jobs.status --root s3://bucket/app --application-id mine --topology mypkg.app:build_topology \
        --set storage_options.AWS_ENDPOINT_URL=http://localhost:8333 --set storage_options.AWS_ALLOW_HTTP=true
"""

from __future__ import annotations

import sys

from deltastreams.jobs.cli import main_for


def main(argv: list[str] | None = None) -> int:
    return main_for("status", argv, prog="python -m deltastreams.jobs.status", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
