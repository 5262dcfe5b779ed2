"""Arrow's memory pool in an application's driver: the system allocator, unless one was chosen.

pyarrow's default pool on Linux is mimalloc, which keeps a heap per thread and takes back the
heap of a thread that has ended only lazily. The driver's Arrow work runs on threads that come and
go (py4j's callback threads, retention, the trigger's helpers), so its resident memory grew while
Arrow held next to nothing: in a soak of issue 42 (2,000 events/s, 100 ms), mimalloc's region
36 -> 62.5 MB with 0-4 MB live, and the driver at minute 10 223 MB against 178 MB on the system
pool. Four threads at a time allocating and freeing, 120 in all, leave 284 MB resident on
mimalloc and 126 MB on the system pool, nothing live in either. The task hosts keep
mimalloc: each is single-threaded (one heap, reused), and they allocate the Kafka reader's
buffers (5M events from Kafka took 15.1 s with every process on the system pool against 13.0 s,
one pair of runs on a machine whose runs vary by +-2 s).
"""

from __future__ import annotations

import logging
import os

import pyarrow as pa

log = logging.getLogger("deltastreams")

CHOSEN_BY = "ARROW_DEFAULT_MEMORY_POOL"
"""Arrow's own setting (``system``, ``jemalloc``, ``mimalloc``): when set, the driver keeps it."""


def use_system_pool() -> None:
    """Makes the system allocator this process's default Arrow pool, unless ``CHOSEN_BY`` is set."""
    if os.environ.get(CHOSEN_BY):
        return
    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
        log.debug("Arrow's default memory pool is now the system allocator (set %s to choose another)", CHOSEN_BY)
