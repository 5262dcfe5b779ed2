"""The keeper of the Kafka readers' clients between reads (connections of the wire reader,
librdkafka consumers of the other C reader)."""

import os

from deltastreams.sinks._internal.idle_clients import IdleClients


def _keeper(**options):
    closed = []
    return IdleClients(closed.append, **options), closed


def test_a_client_given_back_is_taken_again_by_its_key_only():
    clients, closed = _keeper()
    clients.give_back("broker-a", "connection-1")
    assert clients.take("broker-b") is None
    assert clients.take("broker-a") == "connection-1"
    assert clients.take("broker-a") is None  # out while it reads: a second read opens its own
    assert closed == []


def test_reads_at_once_keep_a_client_each_unless_bounded():
    clients, closed = _keeper()
    clients.give_back("broker", "c1")
    clients.give_back("broker", "c2")
    assert clients.kept() == {"broker": ["c1", "c2"]}
    one_each, closed_one = _keeper(most_per_key=1)
    one_each.give_back("partition-0", "older")
    one_each.give_back("partition-0", "newer")
    assert one_each.kept() == {"partition-0": ["newer"]} and closed_one == ["older"]


def test_clients_idle_too_long_are_closed_at_the_next_take_of_any_key():
    clients, closed = _keeper(idle_close_s=60.0)
    clients.give_back("a", "c-a")
    clients.give_back("b", "c-b")
    clients.idle_close_s = 0.0
    assert clients.take("a") is None
    assert sorted(closed) == ["c-a", "c-b"] and clients.kept() == {}


def test_close_all_closes_every_idle_client_once():
    clients, closed = _keeper()
    clients.give_back("a", "c1")
    clients.give_back("b", "c2")
    clients.close_all()
    clients.close_all()
    assert sorted(closed) == ["c1", "c2"] and clients.kept() == {}


def test_a_forked_child_neither_uses_nor_closes_its_parents_clients():
    clients, closed = _keeper()
    clients.give_back("broker", "parents")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it saw, then leave without running the parent's exit hooks
        try:
            taken = clients.take("broker")
            clients.close_all()
            os.write(write, repr((taken, closed)).encode())
        finally:
            os._exit(0)
    os.close(write)
    child_saw = os.read(read, 1024).decode()
    os.waitpid(pid, 0)
    assert child_saw == repr((None, []))
    assert clients.take("broker") == "parents"  # still the parent's to use
