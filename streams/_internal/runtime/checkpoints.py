"""Spark checkpoints of an application's query: disposable, one per run of the query.

Source positions live in the transaction logs, so Spark's checkpoint is only a cache of the
current run. Each start of the query gets a fresh one on the driver's local disk. Checkpoints of
earlier instances are deleted at start, except the newest: that instance may still be running
and must end by being fenced, not by losing its files. A restart of the query within an instance
(its checkpoint became unusable) deletes the one it replaces.
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path


def fresh_checkpoint(parent: str | Path, instance: str, *, replacing: str | None = None) -> str:
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    if replacing is not None:
        shutil.rmtree(replacing, ignore_errors=True)
    else:
        earlier = sorted((p for p in parent.iterdir() if p.is_dir()), key=lambda p: (p.stat().st_mtime, p.name))
        for old in earlier[:-1]:
            shutil.rmtree(old, ignore_errors=True)
    return str(parent / f"{time.strftime('%Y%m%dT%H%M%S')}-{instance}-{uuid.uuid4().hex[:6]}")
