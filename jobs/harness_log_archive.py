"""The crash harness's own copy of every Delta commit file the job writes.

With retention on, the job deletes old commit files (log retention) and removes files from its
tables (purge, compaction, optimize); the harness's checks still need the full history: every
record ever committed, every decided batch. So while the job runs, a thread copies each new
``_delta_log/<version>.json`` of every table under the root into ``<root>/harness-log-archive``,
polling far more often than retention can delete them (the harness keeps
``retention.log_keep_versions`` versions). Removed data files stay on disk because the harness
sets a long ``retention.removed_file_delay_ms``.

This reads the Delta log format directly (JSON lines), sharing no code with the job.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

ARCHIVE = "harness-log-archive"


def _tables(root: Path) -> list[Path]:
    found = [p for p in (root / "topics").glob("*") if (p / "_delta_log").is_dir()]
    return found + [p for p in (root / "transactions").glob("*/*") if (p / "_delta_log").is_dir()]


class LogArchiver:
    """Archives every ``interval_s`` in a background thread, and once more when stopped."""

    def __init__(self, root: str, interval_s: float = 0.1) -> None:
        self.root = Path(root)
        self.interval_s = interval_s
        self._archived = {str(p.relative_to(self.root / ARCHIVE)) for p in (self.root / ARCHIVE).rglob("*.json")}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harness-log-archive", daemon=True)

    def __enter__(self) -> LogArchiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.archive_once()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.archive_once()

    def archive_once(self) -> None:
        """Copy the commit files not archived yet."""
        for table in _tables(self.root):
            relative = table.relative_to(self.root)
            target = self.root / ARCHIVE / relative
            with os.scandir(table / "_delta_log") as entries:
                for entry in entries:
                    key = str(relative / entry.name)
                    if len(entry.name) != 25 or not entry.name.endswith(".json") or key in self._archived:
                        continue
                    target.mkdir(parents=True, exist_ok=True)
                    try:
                        shutil.copyfile(entry.path, target / f".{entry.name}.tmp")
                    except FileNotFoundError:  # deleted meanwhile: history() reports the gap
                        continue
                    os.replace(target / f".{entry.name}.tmp", target / entry.name)
                    self._archived.add(key)


@dataclass(frozen=True)
class Commit:
    version: int
    actions: list[dict]

    def info(self) -> dict:
        """The commit's ``deltastreams`` document (transaction logs), or {}."""
        commit_info = next((a["commitInfo"] for a in self.actions if "commitInfo" in a), {})
        return json.loads(commit_info.get("deltastreams", "{}"))

    def adds(self) -> list[dict]:
        return [a["add"] for a in self.actions if "add" in a]


def history(root: str, table: Path) -> tuple[list[Commit], list[int]]:
    """Every commit of ``table`` (a directory under the root) in version order, from the archive
    and the live log; and the versions found in neither (a gap makes the checks unreliable)."""
    base = Path(root)
    texts = {}
    for directory in (base / ARCHIVE / table.relative_to(base), table / "_delta_log"):
        for path in directory.glob("*.json"):
            if path.name[:20].isdigit():
                texts.setdefault(int(path.name[:20]), path)
    if not texts:
        return [], []
    commits = [Commit(v, [json.loads(line) for line in texts[v].read_text().splitlines() if line.strip()]) for v in sorted(texts)]
    missing = sorted(set(range(max(texts) + 1)) - set(texts))
    return commits, missing
