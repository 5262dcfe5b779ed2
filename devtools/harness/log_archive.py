"""The crash harness's own copy of every Delta commit file the job writes.

With retention on, the job deletes old commit files (log retention) and removes files from its
tables (purge, compaction, optimize); the harness's checks still need the full history: every
record ever committed, every decided batch. So while the job runs, a thread copies each new
``_delta_log/<version>.json`` of every table under the root into ``<root>/harness-log-archive``,
polling far more often than retention can delete them (on an object-store root, through
pyarrow's S3 filesystem, into a local directory) (the harness keeps
``retention.log_keep_versions`` versions). Removed data files stay on disk because the harness
sets a long ``retention.removed_file_delay_ms``.

This reads the Delta log format directly (JSON lines), sharing no code with the job.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

ARCHIVE = "harness-log-archive"


def _is_commit_file(name: str) -> bool:
    return len(name) == 25 and name.endswith(".json") and name[:20].isdigit()


class LogArchiver:
    """Archives every ``interval_s`` in a background thread, and once more when stopped.

    ``root`` is a directory, or an object-store root reached through ``filesystem`` (then
    ``archive`` names the local directory the copies go to, by default ``<root>/harness-log-archive``)."""

    def __init__(self, root: str, interval_s: float = 0.1, *, filesystem: pafs.FileSystem | None = None, archive: Path | None = None) -> None:
        self.fs = filesystem or pafs.LocalFileSystem()
        self.base = root.split("://", 1)[1].rstrip("/") if "://" in root else str(Path(root).absolute())
        self.archive = Path(archive) if archive is not None else Path(root) / ARCHIVE
        self.interval_s = interval_s
        self._archived = {str(p.relative_to(self.archive)) for p in self.archive.rglob("*.json")}
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

    def _listing(self, directory: str) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(pafs.FileSelector(f"{self.base}/{directory}", allow_not_found=True))

    def _tables(self) -> list[str]:
        """Tables under the root, relative to it: topics/<name> and transactions/<app>/<sub>."""
        found = [f"topics/{t.base_name}" for t in self._listing("topics") if t.type == pafs.FileType.Directory]
        for app in self._listing("transactions"):
            if app.type == pafs.FileType.Directory:
                found += [f"transactions/{app.base_name}/{t.base_name}" for t in self._listing(f"transactions/{app.base_name}") if t.type == pafs.FileType.Directory]
        return found

    def archive_once(self) -> None:
        """Copy the commit files not archived yet."""
        for relative in self._tables():
            target = self.archive / relative
            for entry in self._listing(f"{relative}/_delta_log"):
                key = f"{relative}/{entry.base_name}"
                if not _is_commit_file(entry.base_name) or key in self._archived:
                    continue
                target.mkdir(parents=True, exist_ok=True)
                try:
                    with self.fs.open_input_stream(entry.path) as source:
                        data = source.read()
                except FileNotFoundError:  # deleted meanwhile: history() reports the gap
                    continue
                (target / f".{entry.base_name}.tmp").write_bytes(data)
                os.replace(target / f".{entry.base_name}.tmp", target / entry.base_name)
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
