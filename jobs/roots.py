"""The check every job command that reads a root makes first (``results``, ``check``, ``close``,
``compact``, ``rescale``...): that there is a deltastreams root there at all.

A mistyped ``--root`` used to print an empty result (an output topic that does not exist yet
reads as empty) or a delta-rs traceback; now it is one line and exit code 1:

    error: no deltastreams root at /tmp/pvv (nothing was ever generated or run there); check --root

``generate`` creates a root and needs none; ``run`` checks its input topics itself (a job reading
Kafka may start on an empty root), saying which one is missing.
"""

from __future__ import annotations

from pathlib import Path

from deltastreams.conf.errors import ConfigError


def require_root(root: str | Path) -> None:
    """Raise a ConfigError unless something was generated or run under ``root``. An object-store
    root is listed with the process's storage options (set them first), after the bucket and the
    credentials are checked (:func:`deltastreams.sinks.require_reachable`)."""
    from deltastreams.sinks import require_reachable, root_has_topics

    require_reachable(str(root))
    if not root_has_topics(root):
        raise ConfigError(f"no deltastreams root at {root} (nothing was ever generated or run there); check --root", setting="root")
