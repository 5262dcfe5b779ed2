"""Write the class-data-sharing archive the embedded Spark session starts with (``bin/setup`` runs
this; :mod:`deltastreams.streams._internal.spark.class_archive` says why and how it is used).

    python -m deltastreams.jobs.class_archive            # unless the archive is current
    python -m deltastreams.jobs.class_archive --force    # again

The classes archived are those a real job loads: the pageview example runs on 2,000 generated
events in a scratch directory, in a JVM started with ``-XX:ArchiveClassesAtExit``, which writes
the archive when it exits; then the archive takes its place (replacing any older one) with the key
of this pyspark and this JVM. About a minute; Spark's output goes to the scratch directory's log.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from deltastreams.conf import StreamsConfig
from deltastreams.jobs.pageview import build_topology, generate
from deltastreams.streams.app import StreamsApp
from deltastreams.streams.runtime import CLASS_ARCHIVE, CLASS_ARCHIVE_KEY, class_archive_current, class_archive_key


def write_archive(scratch: Path) -> None:
    from pyspark import SparkContext

    written = CLASS_ARCHIVE.with_name(CLASS_ARCHIVE.name + ".tmp")
    written.parent.mkdir(parents=True, exist_ok=True)
    written.unlink(missing_ok=True)
    CLASS_ARCHIVE_KEY.unlink(missing_ok=True)  # no older archive under this run's JVM
    root = str(scratch / "root")
    generate(root, 2000)
    config = StreamsConfig.load(
        {"application_id": "class-archive", "root": root, "spark_conf": {"spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={written} -Xlog:cds=error,cds+dynamic=error"}}
    )
    app = StreamsApp(build_topology(), config, loglevel=None, log_file=scratch / "spark.log")  # bin/setup's output stays its own
    # Started first, as a run without an end: a run until caught up may end before its session is
    # up, and the classes worth archiving are those of the session and its query.
    app.start()
    app.run(until_caught_up=True, timeout_s=1800)
    jvm = SparkContext._gateway.proc
    app.close_spark()
    jvm.stdin.close()  # PySpark's JVM exits when its stdin closes, writing the archive as it goes
    jvm.wait(timeout=600)
    if not written.is_file():
        raise SystemExit(f"the JVM wrote no class archive (its output is in {app.log_file})")
    os.replace(written, CLASS_ARCHIVE)
    CLASS_ARCHIVE_KEY.write_text(class_archive_key())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.jobs.class_archive", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="write it even if the one there is current")
    parser.add_argument("--if-needed", action="store_true", help="say nothing if the one there is current (bin/setup)")
    args = parser.parse_args(argv)
    if class_archive_current() and not args.force:
        if not args.if_needed:
            print(f"class archive up to date: {CLASS_ARCHIVE}")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="deltastreams-class-archive-"))
    write_archive(scratch)  # on failure the scratch directory stays, with Spark's log
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"deltastreams: class archive for the embedded Spark session written: {CLASS_ARCHIVE} ({CLASS_ARCHIVE.stat().st_size / 2**20:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
