"""PySpark's worker daemon, minus one false alarm: at the end of every run (``SparkSession.stop``)
the JVM closes the sockets of the Python workers it kept for reuse, and each of them, failing to
flush its output into the closed socket, printed a ``BrokenPipeError`` traceback to the driver's
terminal. The peer is gone on purpose, so there is nothing to report: such a worker now exits
quietly. Every other error is reported as PySpark reports it.

Spark starts it instead of ``pyspark.daemon`` through ``spark.python.daemon.module`` (set in
:mod:`deltastreams.streams._internal.spark.session`), on the driver's machine and on every executor.
"""

from __future__ import annotations

from pyspark import daemon

_serve_one_worker = daemon.worker


def _worker_quiet_when_the_jvm_hung_up(sock, authenticated):
    try:
        return _serve_one_worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        return 1  # non-zero: the daemon's loop stops serving this socket and the child exits


daemon.worker = _worker_quiet_when_the_jvm_hung_up

if __name__ == "__main__":
    daemon.manager()
