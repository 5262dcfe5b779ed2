"""Arrow's memory pool in an application's driver: the system allocator, unless one was chosen.

pyarrow's default pool on Linux is mimalloc, which keeps a heap per thread and takes back the
heap of a thread that has ended only lazily. The driver's Arrow work runs on threads that come and
go (py4j's callback threads, retention, the trigger's helpers): four threads at a time allocating
and freeing, 120 in all, leave 284 MB resident on mimalloc and 126 MB on the system pool, nothing
live in either. This switches pyarrow's default, which its Python calls allocate from; Arrow's
C++ internals keep the pool chosen when pyarrow was imported (``ARROW_DEFAULT_MEMORY_POOL``, read
then). Measured in soaks of issue 42 (2,000 events/s, 100 ms): mimalloc's region in the driver
36 -> 62.5 MB by minute 13 before, 30-33 MB at minutes 22-37 and 12-15 MB at 42-52 with this; the
driver as a whole was no smaller at minute 10 (228 MB against 223 MB), where the whole process on
the system pool (the variable set at launch) had 178 MB. The task hosts keep mimalloc: each is
single-threaded (one heap, reused), and they allocate the Kafka reader's buffers (5M events from
Kafka took 15.1 s with every process on the system pool against 13.0 s, one pair of runs on a
machine whose runs vary by +-2 s).
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
