"""Rescale a stopped application's repartition topics and changelogs to N partitions (Kafka Streams
cannot without a reset): see :mod:`deltastreams.streams.rescale` for what moves and why it is crash-safe.

    python -m deltastreams.jobs.rescale --root /tmp/pv --application-id pageview --partitions 6

``--topology module:function`` (or ``path/to/app.py:function``) builds the application's topology
(default: the bundled example of that application id); the rescale needs it to know the stores and
who reads what. The same as ``deltastreams rescale`` and every application's ``rescale`` command.
Running the command again after a crash (or a kill -9) finishes what the first run started; the
application refuses to start until then.
"""

from __future__ import annotations

import sys

from deltastreams.jobs.cli import main_for


def main(argv: list[str] | None = None) -> int:
    return main_for("rescale", argv, prog="python -m deltastreams.jobs.rescale", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
