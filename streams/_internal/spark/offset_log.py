"""Spark's offset log, read by the driver to learn where a micro-batch ends.

Spark writes ``<checkpoint>/offsets/<batch id>`` before it calls ``foreachBatch``: a version line
(``v1``), the batch's metadata (JSON), then one line per source with that source's end offset
(JSON; ``-`` for a source without one). Reading it costs a file read; asking Spark for the
batch's data would run a job through a Python worker. ``tests/streams/test_offset_log.py`` pins
the format against the running Spark version.
"""

from __future__ import annotations

import json

from sinks import filesystem_for


class OffsetLogError(Exception):
    """The offset log of a batch is missing or not in the format this module reads."""


class SparkOffsetLog:
    def __init__(self, checkpoint: str) -> None:
        self.fs, self.path = filesystem_for(f"{checkpoint.rstrip('/')}/offsets")

    def end_offsets(self, batch_id: int) -> dict:
        """The end offset of the (single) source of batch ``batch_id``."""
        try:
            with self.fs.open_input_stream(f"{self.path}/{batch_id}") as stream:
                lines = stream.read().decode().splitlines()
        except OSError as e:
            raise OffsetLogError(f"Spark's offset log has no batch {batch_id} under {self.path}: {e}") from e
        if len(lines) < 3 or not lines[0].startswith("v"):
            raise OffsetLogError(f"unexpected format of {self.path}/{batch_id}: {lines[:3]}")
        try:
            return json.loads(lines[2])
        except ValueError as e:
            raise OffsetLogError(f"unexpected source offset in {self.path}/{batch_id}: {lines[2]!r}") from e
