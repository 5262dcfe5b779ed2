"""Clients of a service (connections, consumers) kept between reads of one process, per key."""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Client = TypeVar("Client")


class IdleClients(Generic[Client]):
    """Kept clients, taken out while a read uses one and given back after it: a client serves one
    read at a time, and the next read of the same key finds it ready (connected, assigned).

    One idle for ``idle_close_s`` (its task moved to another process) is closed at the next take;
    the rest by :meth:`close_all`, at exit. ``most_per_key`` bounds
    the clients kept per key (reads of one key at once each open their own; the extra ones are
    closed when given back). After a fork the child starts with none: the clients it inherited
    are the parent's (their sockets and threads), so it neither uses nor closes them."""

    def __init__(self, close: Callable[[Client], None], *, idle_close_s: float = 60.0, most_per_key: int | None = None) -> None:
        self.idle_close_s = idle_close_s
        self._close = close
        self._most_per_key = most_per_key
        self._lock = threading.Lock()
        self._idle: dict[Hashable, list[tuple[Client, float]]] = {}
        self._pid = os.getpid()
        atexit.register(self.close_all)

    def take(self, key: Hashable) -> Client | None:
        """A kept client of ``key``, or None: the caller opens one."""
        with self._lock:
            self._forget_parents()
            stale = self._pop_stale(time.monotonic())
            kept = self._idle.get(key)
            client = kept.pop()[0] if kept else None
            if kept == []:
                del self._idle[key]
        self._close_each(stale)
        return client

    def give_back(self, key: Hashable, client: Client) -> None:
        with self._lock:
            self._forget_parents()
            kept = self._idle.setdefault(key, [])
            kept.append((client, time.monotonic()))
            extra = len(kept) - self._most_per_key if self._most_per_key is not None else 0
            surplus = [c for c, _ in kept[:extra]] if extra > 0 else []
            del kept[: len(surplus)]
        self._close_each(surplus)

    def kept(self) -> dict[Hashable, list[Client]]:
        """The idle clients per key, oldest first."""
        with self._lock:
            self._forget_parents()
            return {key: [c for c, _ in held] for key, held in self._idle.items()}

    def close_all(self) -> None:
        with self._lock:
            self._forget_parents()
            idle, self._idle = [c for held in self._idle.values() for c, _ in held], {}
        self._close_each(idle)

    def _forget_parents(self) -> None:
        if os.getpid() != self._pid:
            self._idle, self._pid = {}, os.getpid()

    def _pop_stale(self, now: float) -> list[Client]:
        stale = []
        for key in list(self._idle):
            held = self._idle[key]
            stale += [c for c, since in held if now - since > self.idle_close_s]
            fresh = [(c, since) for c, since in held if now - since <= self.idle_close_s]
            if fresh:
                self._idle[key] = fresh
            else:
                del self._idle[key]
        return stale

    def _close_each(self, clients: list[Client]) -> None:
        for client in clients:
            self._close(client)
