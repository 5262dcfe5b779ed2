"""Kafka Streams' own TopologyTestDriver, in a JVM of its own (``deltastreams.oracle.Oracle``,
built by bin/setup from ``jvm/``): scenarios go in as JSON lines, results come back the same way.
One JVM serves a whole run."""

from __future__ import annotations

import json
import subprocess
import tempfile

from deltastreams.devtools.differential.scenarios import Scenario
from deltastreams.devtools.servers.jvm import classpath, java
from deltastreams.devtools.servers.process_tree import terminate

KAFKA_STREAMS_VERSION = "4.3.1"  # jvm/pom.xml's kafka.version


class KafkaStreamsOracle:
    def __init__(self) -> None:
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [java(), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
             "-cp", classpath(), "deltastreams.oracle.Oracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, encoding="utf-8",
        )

    def run(self, scenario: Scenario) -> dict:
        """What Kafka Streams makes of ``scenario``: ``{"describe", "outputs", "dropped", "error"}``."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(scenario.to_json() + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self._log.seek(0)
            raise RuntimeError(f"the Kafka Streams oracle exited ({self._process.poll()}): {self._log.read().decode(errors='replace')[-2000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            terminate(self._process, grace_s=5)
        self._log.close()

    def __enter__(self) -> KafkaStreamsOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
