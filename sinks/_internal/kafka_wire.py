"""A partition's offset range fetched over Kafka's own protocol, its record batches decoded in C
(``kafka_range.c``'s ``decode``) into Arrow's buffers.

Why not librdkafka, as the other C reader does: it makes a message (two allocations) per record
on its broker thread and frees it on the reader's; of one partition's 500k pageview records that
was ~290 ms of CPU, most in malloc, free and the futex wake-ups of their arena locks, against
~70 ms to read the same records from a Delta topic. Fetched and decoded here: ~70 ms of CPU,
receiving included.

What it speaks, on plaintext connections kept per broker: ApiVersions v0 (Fetch v11 and Metadata
v8 must be served), Metadata v8 to the first bootstrap server for the partitions' leaders (once
per topic and process), Fetch v11 to the leader, sessionless, read committed unless the settings
say otherwise. Where it cannot read a range
exactly as the other readers do, :func:`read_wire` returns None and the caller reads it through
librdkafka: settings beyond the bootstrap servers and the reader's own (security, a client's
tuning), compressed batches (remembered per topic), an older message format, and any error but
an offset out of range (a leader that moved, a broker gone): librdkafka's retries and messages
are kept for those.
"""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from deltastreams.sinks._internal.idle_clients import IdleClients
from deltastreams.sinks._internal.kafka_arrow import RangeReadError, RawRecords, raw_records, reader

log = logging.getLogger(__name__)

FETCH, METADATA, API_VERSIONS = 1, 3, 18
FETCH_VERSION, METADATA_VERSION = 11, 8
NONE, OFFSET_OUT_OF_RANGE = 0, 1
_DECODE_OK, _DECODE_COMPRESSED, _DECODE_CORRUPT, _DECODE_NO_MEMORY, _DECODE_OLD_FORMAT = range(5)
PARTITION_MAX_BYTES = 16 << 20
"""Per fetch: a backlog comes in few round trips (a broker sends at least one whole batch, however
large). Fetching less for a small range far behind its partition's end changed nothing measurable
(sendfile on the broker; 20 ranges of 50k records: the same wall and CPU)."""
MAX_WAIT_MS = 200

_READER_SETTINGS = {
    "bootstrap.servers", "group.id", "enable.auto.commit", "enable.auto.offset.store", "isolation.level", "enable.partition.eof",
    "auto.offset.reset", "fetch.queue.backoff.ms", "client.id",
}
"""Settings the wire reader honours or that do not change what a read returns: with any other
(security, a client's own tuning) librdkafka reads the range."""


class _Unsupported(Exception):
    """The wire reader cannot read this range as librdkafka would: librdkafka reads it."""


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = 0
        self._buffer = bytearray(1 << 16)
        try:
            r = _Cursor(self._call(API_VERSIONS, 0, b"", timeout_s))
            error, served = r.take(">h"), {}
            for _ in range(r.take(">i")):
                key, low, high = r.take(">h"), r.take(">h"), r.take(">h")
                served[key] = (low, high)
            for api, version in ((FETCH, FETCH_VERSION), (METADATA, METADATA_VERSION)):
                low, high = served.get(api, (0, -1))
                if error != NONE or not low <= version <= high:
                    raise _Unsupported(f"the broker at {host}:{port} does not serve version {version} of API {api} (it serves v{low}-v{high})")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.sock.close()

    def _call(self, api_key: int, version: int, body: bytes, timeout_s: float) -> memoryview:
        """Send one request and return its response's body (a view of this connection's buffer,
        valid until the next call)."""
        self._correlation += 1
        header = struct.pack(">hhih", api_key, version, self._correlation, len(b"deltastreams")) + b"deltastreams"
        self.sock.settimeout(max(timeout_s, 0.001))
        self.sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", self._receive(4))[0]
        body_view = self._receive(size)
        if _Cursor(body_view).take(">i") != self._correlation:
            raise ConnectionError("a Kafka response out of order")
        return body_view[4:]

    def _receive(self, size: int) -> memoryview:
        if len(self._buffer) < size:
            self._buffer = bytearray(max(size, 2 * len(self._buffer)))
        view = memoryview(self._buffer)[:size]
        got = 0
        while got < size:
            n = self.sock.recv_into(view[got:], size - got)
            if n == 0:
                raise ConnectionError("the broker closed the connection")
            got += n
        return view

    def leaders(self, topic: str, timeout_s: float) -> dict[int, tuple[str, int] | None]:
        """Each partition's leader address (None while it has none), from Metadata v8."""
        name = topic.encode()
        body = struct.pack(">ih", 1, len(name)) + name + bytes(3)  # no auto-creation, no authorized operations
        r = _Cursor(self._call(METADATA, METADATA_VERSION, body, timeout_s))
        r.take(">i")  # throttle time
        brokers = {}
        for _ in range(r.take(">i")):
            node, host, port, _rack = r.take(">i"), r.string(), r.take(">i"), r.string()
            brokers[node] = (host, port)
        r.string(), r.take(">i")  # cluster id, controller
        leaders = {}
        for _ in range(r.take(">i")):
            error, found, _internal = r.take(">h"), r.string(), r.take(">b")
            if error != NONE or found != topic:
                raise _Unsupported(f"metadata for topic {found!r}: error code {error}")
            for _ in range(r.take(">i")):
                _error, index, leader, _epoch = r.take(">h"), r.take(">i"), r.take(">i"), r.take(">i")
                for _ in range(3):  # replicas, in-sync replicas, offline replicas
                    count = r.take(">i")
                    r.at += 4 * count
                leaders[index] = brokers.get(leader)
            r.take(">i")  # authorized operations
        return leaders

    def fetch(self, topic: str, partition: int, offset: int, isolation: int, timeout_s: float):
        """(error code, aborted transactions or None, record set) for ``partition`` from ``offset``."""
        name = topic.encode()
        body = (
            struct.pack(">iiiibii", -1, MAX_WAIT_MS, 1, PARTITION_MAX_BYTES, isolation, 0, -1)
            + struct.pack(">ih", 1, len(name)) + name
            + struct.pack(">iiiqqi", 1, partition, -1, offset, -1, PARTITION_MAX_BYTES)
            + struct.pack(">ih", 0, 0)  # no forgotten topics, no rack
        )
        r = _Cursor(self._call(FETCH, FETCH_VERSION, body, timeout_s + MAX_WAIT_MS / 1000))
        _throttle, error, _session = r.take(">i"), r.take(">h"), r.take(">i")
        if error != NONE:
            return error, None, b""
        for _ in range(r.take(">i")):
            r.string()  # the topic
            for _ in range(r.take(">i")):
                index, error, _high, _stable, _start = r.take(">i"), r.take(">h"), r.take(">q"), r.take(">q"), r.take(">q")
                aborted = [(r.take(">q"), r.take(">q")) for _ in range(max(r.take(">i"), 0))]  # -1: null
                _replica, records = r.take(">i"), r.bytes()
                if index == partition:
                    return error, sorted(aborted, key=lambda a: a[1]), records
        raise ConnectionError(f"a Fetch response without partition {partition}")


class _Cursor:
    """Reads a response's fields in order; a response that does not parse is the connection's
    fault (``ConnectionError``): librdkafka reads the range."""

    def __init__(self, data: memoryview) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.at)
        except struct.error:
            raise ConnectionError("a Kafka response shorter than its fields") from None
        self.at += struct.calcsize(fmt)
        return value

    def bytes(self) -> memoryview:
        """A length-prefixed (int32) byte field, as a view; empty for null."""
        size = max(self.take(">i"), 0)
        if self.at + size > len(self.data):
            raise ConnectionError("a Kafka response shorter than its fields")
        self.at += size
        return self.data[self.at - size : self.at]

    def string(self) -> str | None:
        length = self.take(">h")
        if length < 0:
            return None
        self.at += length
        try:
            return bytes(self.data[self.at - length : self.at]).decode()
        except UnicodeDecodeError:
            raise ConnectionError("a Kafka response with a string that is not UTF-8") from None


_connections: IdleClients[_Connection] = IdleClients(lambda connection: connection.close())
"""Connections per broker address; reads of one broker at once each use their own."""
_leaders: dict[tuple[str, str, int], tuple[str, int]] = {}
_compressed: set[tuple[str, str]] = set()


def close_connections() -> None:
    _connections.close_all()


def usable(settings: Mapping[str, Any]) -> bool:
    """Whether the wire reader reads with these consumer settings (else librdkafka does)."""
    return reader() is not None and set(settings) <= _READER_SETTINGS and str(settings.get("isolation.level", "read_committed")) in ("read_committed", "read_uncommitted")


def read_wire(settings: Mapping[str, Any], topic: str, partition: int, start: int, end: int, timeout_s: float) -> RawRecords | None:
    """The records of ``partition`` with offsets in ``[start, end)``, or None when librdkafka
    must read them (see the module's docstring). Raises :class:`RangeReadError` as the other C
    reader does for an offset out of range and a range not there within ``timeout_s``."""
    bootstrap = str(settings["bootstrap.servers"])
    if not usable(settings) or (bootstrap, topic) in _compressed:
        return None
    native = reader()
    isolation = 1 if settings.get("isolation.level", "read_committed") == "read_committed" else 0
    deadline = time.monotonic() + timeout_s
    columns = native.new_columns()
    try:
        address = _leader(settings, topic, partition, timeout_s)
        connection = _connections.take(address) or _Connection(*address, timeout_s)
    except (OSError, _Unsupported, KeyError) as e:
        _leaders.pop((bootstrap, topic, partition), None)
        log.info("Kafka wire reader gave up on %s[%d]: %s", topic, partition, e)
        return None
    position, rows = start, 0
    try:
        while position < end:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RangeReadError("timed_out", "", rows)
            error, aborted, records = connection.fetch(topic, partition, position, isolation, left)
            if error == OFFSET_OUT_OF_RANGE:
                raise RangeReadError("offset_out_of_range", f"offset {position} is out of the partition's range", rows)
            if error != NONE:
                raise _Unsupported(f"Fetch error code {error}")
            status, position, rows = native.decode(columns, records, position, end, aborted if isolation else None)
            if status == _DECODE_COMPRESSED:
                _compressed.add((bootstrap, topic))
                raise _Unsupported("compressed batches (librdkafka decompresses them)")
            if status != _DECODE_OK:
                raise _Unsupported({_DECODE_CORRUPT: "a malformed record batch", _DECODE_OLD_FORMAT: "an old message format"}.get(status, "out of memory"))
    except (_Unsupported, OSError) as e:  # OSError: the connection, not the range; librdkafka retries and reports
        connection.close()
        _leaders.pop((bootstrap, topic, partition), None)
        log.info("Kafka wire reader gave up on %s[%d] [%d, %d): %s", topic, partition, start, end, e)
        return None
    except BaseException:
        connection.close()
        raise
    _connections.give_back(address, connection)
    rows, *buffers = native.columns(columns)
    return raw_records(rows, *_wrapped(buffers, columns))


def _wrapped(buffers: Any, owner: Any) -> Any:
    """The (address, size) pairs of :func:`decode`'s columns as Arrow buffers over that memory,
    each holding ``owner`` (the columns) alive; counts are left as they are."""
    if isinstance(buffers, tuple) and len(buffers) == 2 and all(isinstance(x, int) for x in buffers):
        address, size = buffers
        return pa.foreign_buffer(address, size, base=owner) if size else pa.py_buffer(b"")
    if isinstance(buffers, list | tuple):
        return type(buffers)(_wrapped(b, owner) for b in buffers)
    return buffers


def partition_count(settings: Mapping[str, Any], topic: str, timeout_s: float) -> int | None:
    """How many partitions the topic has, from a bootstrap server's metadata; None when librdkafka
    must ask (settings the wire reader does not speak, a topic the broker reports an error for, a
    broker that cannot be reached: librdkafka's message says why)."""
    if not usable(settings):
        return None
    try:
        return len(_metadata(settings, topic, timeout_s))
    except (OSError, _Unsupported) as e:
        log.info("Kafka wire reader could not read the metadata of %s: %s", topic, e)
        return None


def _leader(settings: Mapping[str, Any], topic: str, partition: int, timeout_s: float) -> tuple[str, int]:
    """The partition leader's address (kept for the process once known)."""
    bootstrap = str(settings["bootstrap.servers"])
    if (bootstrap, topic, partition) not in _leaders:
        _metadata(settings, topic, timeout_s)
    return _leaders[(bootstrap, topic, partition)]


def _metadata(settings: Mapping[str, Any], topic: str, timeout_s: float) -> dict[int, tuple[str, int] | None]:
    """Each partition's leader, asked of the first bootstrap server; the leaders are kept."""
    bootstrap = str(settings["bootstrap.servers"])
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    address = (host.strip("[]"), int(port))
    connection = _connections.take(address) or _Connection(*address, timeout_s)
    try:
        leaders = connection.leaders(topic, timeout_s)
    except BaseException:
        connection.close()
        raise
    _connections.give_back(address, connection)
    _leaders.update({(bootstrap, topic, index): leader for index, leader in leaders.items() if leader is not None})
    return leaders
