"""A class-data-sharing archive of the classes an embedded Spark session loads (JDK AppCDS).

A JVM that starts Spark loads and verifies ~15,000 classes; mapped from an archive instead, the
session start and its first job took 25-55% less time here (2 cores, loaded, alternating runs:
a session and a one-job query, 2 pairs). ``bin/setup`` writes the archive once
(:mod:`deltastreams.jobs.class_archive`, a short pageview run with ``-XX:ArchiveClassesAtExit``)
into the Python environment whose pyspark jars it holds, beside a key naming that pyspark and that
JVM; it is never committed. The embedded session (:func:`java_options`, used by
:func:`deltastreams.streams._internal.spark.session.spark_session`) starts with it when the key
still matches. Should the JVM find it unusable anyway (another JDK build, another class path), it
says so on its stderr (the job's log file) and starts without it: the archive only ever saves time.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path

ARCHIVE = Path(sys.prefix) / "share" / "deltastreams" / "spark-classes.jsa"
KEY = ARCHIVE.with_suffix(".key")


@functools.cache
def key() -> str:
    """What the archive must have been made with: this pyspark (its jars are the class path) and
    this JVM (the java binary PySpark starts, by path and modification time: no JVM is started
    to ask its version)."""
    import pyspark

    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get("JAVA_HOME") else shutil.which("java")
    if java is None:
        return f"pyspark {pyspark.__version__}; no java"
    binary = os.path.realpath(java)
    return f"pyspark {pyspark.__version__}; {binary} {os.stat(binary).st_mtime_ns}"


def current() -> bool:
    """The archive exists and was made for this pyspark and this JVM."""
    try:
        return ARCHIVE.is_file() and KEY.read_text() == key()
    except OSError:
        return False


def java_options() -> str:
    """The driver JVM's options that map the archive ("" without a current one)."""
    return f"-XX:SharedArchiveFile={ARCHIVE}" if current() else ""
