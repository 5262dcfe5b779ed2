"""Where the JVM side lives: the jars ``bin/setup`` builds from ``jvm/pom.xml`` (Apache Kafka, Kafka
Streams and its test driver, the project's Java programs) and the ``java`` that runs them.

The jars are never committed: ``bin/setup`` resolves them from Maven Central once into
``jvm/target`` (ignored) and later runs work offline. A check that needs them and finds none says
so, and how to get them, instead of failing deep inside a ``java`` command line.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parents[2] / "jvm"
PROJECT_JAR = JVM_DIR / "target" / "deltastreams-jvm.jar"
LIB_DIR = JVM_DIR / "target" / "lib"


class JvmUnavailable(RuntimeError):
    """The JVM artifacts are not built here, or no Java runs them: run ``bin/setup``."""


def java() -> str:
    """The ``java`` of JAVA_HOME, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise JvmUnavailable("no 'java' on PATH and JAVA_HOME is unset: install a JDK 17 and run bin/setup")
    return found


def classpath() -> str:
    """The project's jar and every dependency jar, for ``java -cp``."""
    if not PROJECT_JAR.exists() or not LIB_DIR.is_dir():
        raise JvmUnavailable(
            f"the JVM artifacts are not built ({PROJECT_JAR} is missing): run bin/setup, which builds jvm/pom.xml with Maven"
        )
    return f"{PROJECT_JAR}{os.pathsep}{LIB_DIR}/*"


SPARK_LIB_DIR = JVM_DIR / "spark" / "target" / "lib"


def spark_jars() -> list[str]:
    """delta-spark and Spark's Kafka connector with what they need beyond the pyspark wheel
    (``jvm/spark/pom.xml``), for ``spark.jars``."""
    jars = sorted(str(p) for p in SPARK_LIB_DIR.glob("*.jar"))
    if not jars:
        raise JvmUnavailable(f"delta-spark's jars are not built ({SPARK_LIB_DIR} is empty): run bin/setup, which builds jvm/spark/pom.xml with Maven")
    return jars
