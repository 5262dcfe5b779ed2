"""Whether an application instance is alive: a heartbeat file it rewrites while it runs.

A transaction log says which instance holds a sub-topology (the last registered epoch), not
whether that instance still runs: an idle application commits nothing, and a killed one leaves
its registration behind. So each instance rewrites ``<root>/instances/<application_id>/<instance>.json``
every :data:`INTERVAL_S` (one small PUT on an object store) with the epochs it holds, and marks
it stopped when it stops. An instance is alive while its file is fresh (younger than
:data:`EXPIRY_S`) and not marked stopped: a kill -9 is recognised by the file going stale.
``status`` and ``reset`` read these files; only a running instance writes them. Clocks: the
beat's time is the writer's wall clock, compared with the reader's (a few seconds of skew between
machines only shift the expiry).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping

import pyarrow.fs as pafs

from deltastreams.sinks import filesystem_for, under_root

log = logging.getLogger("deltastreams")

INTERVAL_S = 3.0
EXPIRY_S = 15.0
"""A heartbeat older than this (five missed beats) is a dead instance's."""
_PRUNE_AFTER_S = 3600.0
"""Files of instances stopped or dead for this long are removed by the next instance's start."""


def instances_dir(root: str, application_id: str) -> str:
    return under_root(root, "instances", application_id)


def read_heartbeats(root: str, application_id: str) -> dict[str, dict]:
    """Every instance's last heartbeat, by instance id (read-only; an unreadable file is skipped:
    it is being replaced)."""
    fs, base = filesystem_for(instances_dir(root, application_id))
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except OSError:
        return {}
    beats = {}
    for info in infos:
        if info.type != pafs.FileType.File or not info.base_name.endswith(".json"):
            continue
        try:
            with fs.open_input_stream(info.path) as stream:
                beat = json.loads(stream.read().decode())
        except (OSError, ValueError):
            continue
        beats[beat.get("instance", info.base_name.removesuffix(".json"))] = beat
    return beats


def is_alive(beat: Mapping | None, now_ms: float | None = None) -> bool:
    if beat is None or beat.get("stopped_ms") is not None:
        return False
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    return now_ms - beat.get("beat_ms", 0) < EXPIRY_S * 1000


def age_s(beat: Mapping, now_ms: float | None = None) -> float:
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    return max(0.0, (now_ms - beat.get("beat_ms", 0)) / 1000)


class Heartbeat(threading.Thread):
    """Rewrites this instance's heartbeat every :data:`INTERVAL_S` until :meth:`stop`, which marks
    it stopped. ``epochs()`` gives the epochs the instance holds, by sub-topology."""

    def __init__(self, root: str, application_id: str, instance: str, epochs: Callable[[], Mapping[int, int]]) -> None:
        super().__init__(name="deltastreams-heartbeat", daemon=True)
        self.root = root
        self.application_id = application_id
        self.instance = instance
        self.epochs = epochs
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._started_ms = int(time.time() * 1000)
        self._fs, base = filesystem_for(instances_dir(root, application_id))
        self._local = isinstance(self._fs, pafs.LocalFileSystem)
        self._path = f"{base}/{instance}.json"
        if self._local:
            os.makedirs(base, exist_ok=True)

    def beat(self, *, stopped: bool = False) -> None:
        now = int(time.time() * 1000)
        document = {
            "instance": self.instance,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_ms": self._started_ms,
            "beat_ms": now,
            "stopped_ms": now if stopped else None,
            "interval_ms": int(INTERVAL_S * 1000),
            "epochs": {str(sub): epoch for sub, epoch in self.epochs().items() if epoch >= 0},
        }
        with self._lock:
            self._write(json.dumps(document).encode())

    def _write(self, data: bytes) -> None:
        # A reader must never see half a file: a rename locally, a single PUT on an object store.
        target = f"{self._path}.{os.getpid()}.tmp" if self._local else self._path
        with self._fs.open_output_stream(target) as out:
            out.write(data)
        if self._local:
            os.replace(target, self._path)

    def start(self) -> None:
        self.beat()
        self._prune()
        super().start()

    def run(self) -> None:
        while not self._stopping.wait(INTERVAL_S):
            try:
                self.beat()
            except Exception:  # noqa: BLE001 - a missed beat only makes the instance look dead sooner
                log.debug("writing the heartbeat failed", exc_info=True)

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self.is_alive():
            self.join()
        try:
            self.beat(stopped=True)
        except Exception:  # noqa: BLE001 - then the beat goes stale instead: the same verdict, later
            log.debug("marking the heartbeat stopped failed", exc_info=True)

    def _prune(self) -> None:
        """Other instances' files, stopped or dead for an hour: they only tell history."""
        now = time.time() * 1000
        for instance, beat in read_heartbeats(self.root, self.application_id).items():
            if instance != self.instance and not is_alive(beat, now) and age_s(beat, now) > _PRUNE_AFTER_S:
                try:
                    self._fs.delete_file(f"{self._path.rsplit('/', 1)[0]}/{instance}.json")
                except OSError:
                    pass
