"""The one thing pyproject.toml cannot say: the packages at the repository's top level are installed
under one name, ``deltastreams`` (``streams/`` -> ``deltastreams.streams``), every subpackage
included as it is added. Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

LAYOUT = ("conf", "sinks", "state", "topology", "streams", "jobs")

INIT = '''"""deltastreams: Kafka Streams' programming model on Apache Spark, with Delta Lake tables as the log.

``from deltastreams.streams import StreamsBuilder``; the other packages: deltastreams.conf, .sinks,
.state, .topology, .jobs."""
'''


class BuildWithInit(build_py):
    """Installed, ``deltastreams`` is a regular package: its ``__init__.py`` is written here, as the
    repository root has none (pytest and the tools would take the root for a package of its own;
    in a checkout ``deltastreams`` is a namespace package). A regular package cannot be joined by
    a stray ``deltastreams/`` directory in the working directory, and a wheel or zip of it given to
    ``--py-files`` imports without the directory entries a namespace package in a zip needs."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # the editable install imports the checkout: nothing to write
            return
        init = Path(self.build_lib, "deltastreams", "__init__.py")
        init.write_text(INIT)


setup(
    packages=[f"deltastreams.{name}" for name in find_packages(include=[*LAYOUT, *(f"{p}.*" for p in LAYOUT)])],
    # deltastreams.streams._internal -> ./streams/_internal: the root stands for deltastreams.
    package_dir={"deltastreams": "."},
    package_data={"deltastreams.conf": ["*.toml"]},
    cmdclass={"build_py": BuildWithInit},
    # Kafka ranges read in C into Arrow buffers (sinks/_internal/kafka_range.c): optional, so an
    # install without a C compiler still works, reading Kafka through confluent-kafka's Python
    # objects (slower; sinks/_internal/kafka_arrow.py says so once in the log).
    # Flat JSON values parsed in C (sinks/_internal/json_columns.c), optional the same way: without
    # it Arrow's JSON reader parses them (several times the CPU).
    ext_modules=[
        Extension("deltastreams.sinks._internal._kafka_range", ["sinks/_internal/kafka_range.c"], libraries=["dl"], optional=True),
        Extension("deltastreams.sinks._internal._json_columns", ["sinks/_internal/json_columns.c"], optional=True),
    ],
)
