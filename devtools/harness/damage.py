"""Damage local state the way disks and crashes do, between crash-harness trials.

Stores: RocksDB files deleted, truncated or overwritten, or a whole store gone; checkpoints:
Spark checkpoint files garbled. The job must move corrupt stores aside, rebuild them from their
changelogs and carry on (``deltastreams.state.task_stores``); checkpoints are disposable (each start takes a
fresh one).
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path


def corrupt_local_state(state_dir: Path, rng: random.Random) -> list[str]:
    """Damage one store and one checkpoint file at random (if there are any) under an
    application's local state directory; returns what was done."""
    done = []
    stores = [p for p in state_dir.glob("*_*/*") if p.is_dir() and ".corrupt-" not in p.name]
    if stores:
        store = rng.choice(stores)
        files = sorted(f for f in store.iterdir() if f.is_file() and f.name != "LOCK")
        how = rng.choice(["delete CURRENT", "garble MANIFEST", "truncate a file", "overwrite bytes", "delete the store"])
        manifests = [f for f in files if f.name.startswith("MANIFEST")]
        if how == "delete CURRENT" and (store / "CURRENT").exists():
            (store / "CURRENT").unlink()
        elif how == "garble MANIFEST" and manifests:
            _overwrite(manifests[0], rng)
        elif how == "truncate a file" and files:
            target = rng.choice(files)
            os.truncate(target, target.stat().st_size // 2)
        elif how == "overwrite bytes" and files:
            _overwrite(rng.choice(files), rng)
        else:
            how = "delete the store"
            shutil.rmtree(store)
        done.append(f"store: {how}")
    checkpoint_files = [f for f in (state_dir / "checkpoints").rglob("*") if f.is_file()]
    if checkpoint_files:
        _overwrite(rng.choice(checkpoint_files), rng)
        done.append("checkpoint: overwrite bytes")
    return done


def stores_moved_aside(state_dir: Path) -> int:
    return len(list(state_dir.glob("*_*/*.corrupt-*")))


def _overwrite(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    for _ in range(min(16, len(data))):
        data[rng.randrange(len(data))] ^= 0xFF
    path.write_bytes(bytes(data) or b"garbage")
