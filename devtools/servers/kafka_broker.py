"""Apache Kafka on loopback for tests, harnesses and the README's Kafka recipe: a single-node KRaft
broker (broker and controller in one JVM) from the jars ``bin/setup`` resolves (``jvm/pom.xml``),
on free ports, in a data directory of its own, waited for until it answers metadata requests,
stopped and waited for.

    with KafkaBroker.start() as broker:
        print(broker.bootstrap_servers)

    python -m deltastreams.devtools.servers.kafka_broker          # by hand: prints the bootstrap servers, runs until Ctrl-C

Settings that differ from a production broker, and why:
- every replication factor and ``min.insync.replicas`` is 1: one broker;
- ``log.retention.ms=-1``: Kafka judges retention by record timestamps, and the pageview generator
  stamps events in 2023, which a 7-day retention would delete at the next check;
- ``group.initial.rebalance.delay.ms=0`` and short transaction-coordinator timeouts: tests should not
  wait for a production cluster's settling times.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from deltastreams.devtools.servers.jvm import JvmUnavailable, classpath, java
from deltastreams.devtools.servers.process_tree import terminate
from deltastreams.sinks.kafka import close_readers

KAFKA_VERSION = "4.3.1"  # jvm/pom.xml's kafka.version


class BrokerUnavailable(RuntimeError):
    """The broker cannot start on this machine (no JVM artifacts, no Java, or it exited)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _properties(data_dir: Path, port: int, controller_port: int) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir / "logs"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "3",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "min.insync.replicas": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.retention.ms": "-1",
        "auto.create.topics.enable": "false",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


@dataclass
class KafkaBroker:
    process: subprocess.Popen
    port: int
    data_dir: Path
    log_path: Path
    owns_data_dir: bool

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @classmethod
    def start(cls, data_dir: str | Path | None = None, timeout_s: float = 60.0, heap: str = "512m") -> KafkaBroker:
        """A formatted, running broker; ``data_dir`` (a new temporary one by default, removed at
        :meth:`stop`) holds its logs, its configuration and ``broker.log``."""
        try:
            cp, java_bin = classpath(), java()
        except JvmUnavailable as e:
            raise BrokerUnavailable(str(e)) from e
        owns = data_dir is None
        directory = Path(tempfile.mkdtemp(prefix="deltastreams-kafka-")) if owns else Path(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        port, controller_port = free_port(), free_port()
        config = directory / "server.properties"
        config.write_text(_properties(directory, port, controller_port))
        log_path = directory / "broker.log"
        base = [java_bin, f"-Xmx{heap}", "-XX:+UseSerialGC", "-Dslf4j.internal.verbosity=WARN", "-cp", cp]
        with open(log_path, "ab") as log:
            cluster_id = subprocess.run(
                [*base, "kafka.tools.StorageTool", "random-uuid"], capture_output=True, text=True, check=True
            ).stdout.strip()
            formatted = subprocess.run(
                [*base, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config), "--standalone"],
                stdout=log, stderr=log,
            )
            if formatted.returncode != 0:
                raise BrokerUnavailable(f"formatting the broker's storage failed ({formatted.returncode}): see {log_path}")
            process = subprocess.Popen(
                [*base, "kafka.Kafka", str(config)], stdout=log, stderr=log, start_new_session=True
            )
        broker = cls(process, port, directory, log_path, owns)
        try:
            broker._wait_until_ready(time.monotonic() + timeout_s)
        except BaseException:
            broker.stop()
            raise
        return broker

    def _wait_until_ready(self, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient

        admin = None
        while True:
            if self.process.poll() is not None:
                raise BrokerUnavailable(f"the Kafka broker exited at start ({self.process.returncode}): {self._log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                admin = admin or AdminClient({"bootstrap.servers": self.bootstrap_servers})
                if admin.list_topics(timeout=1).brokers:
                    return
            except Exception:  # noqa: BLE001 - not answering yet
                pass
            if time.monotonic() > deadline:
                raise BrokerUnavailable(f"the Kafka broker did not answer on {self.bootstrap_servers} in time: {self._log_tail()}")
            time.sleep(0.2)

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-800:]
        except OSError:
            return "(no log)"

    def create_topic(self, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        for future in admin.create_topics([NewTopic(name, partitions, 1, config=config or {})]).values():
            future.result(timeout=30)

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        """Delete topic ``name`` if it exists, and wait until the broker no longer lists it (a
        topic of the same name created right after a deletion can otherwise fail)."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        try:
            admin.delete_topics([name])[name].result(timeout=timeout_s)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
        deadline = time.monotonic() + timeout_s
        while name in admin.list_topics(timeout=timeout_s).topics:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} still listed {timeout_s} s after its deletion")
            time.sleep(0.1)

    def stop(self) -> None:
        close_readers()  # this process's kept consumers would go on trying to reconnect
        terminate(self.process, grace_s=15)
        if self.owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> KafkaBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.servers.kafka_broker", description=f"Apache Kafka {KAFKA_VERSION} (KRaft, one node) on loopback until Ctrl-C or SIGTERM")
    parser.add_argument("--data-dir", help="where the broker keeps its logs (default: a temporary directory, removed at exit)")
    args = parser.parse_args(argv)
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    with KafkaBroker.start(args.data_dir) as broker:
        print(f"Apache Kafka {KAFKA_VERSION} at {broker.bootstrap_servers} (data and broker.log in {broker.data_dir}); Ctrl-C stops it", flush=True)
        while not stop and broker.process.poll() is None:
            time.sleep(0.2)


if __name__ == "__main__":
    main()
