import pytest

from deltastreams.conf.errors import StateStoreError
from deltastreams.state import ChangeLoggingStore, ChangelogEntry, InMemoryKeyValueStore, RocksDBKeyValueStore, TimeKeyedStore, apply_changelog
from deltastreams.state.window import time_key


@pytest.fixture(params=["memory", "rocksdb"])
def make_store(request, tmp_path):
    opened = []

    def make(name="store"):
        if request.param == "memory":
            store = InMemoryKeyValueStore(name)
        else:
            store = RocksDBKeyValueStore(name, tmp_path / f"{name}-{len(opened)}")
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_store_contract_get_range_write_and_delete(make_store):
    store = make_store()
    store.write([ChangelogEntry(b"b", b"2"), ChangelogEntry(b"a", b"1"), ChangelogEntry(b"c", b"3")])
    assert store.get(b"a") == b"1" and store.get(b"zz") is None
    assert store.get_many([b"c", b"x", b"a"]) == [b"3", None, b"1"]
    assert list(store.range()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert list(store.range(b"b", b"c")) == [(b"b", b"2")]
    store.write([ChangelogEntry(b"b", None), ChangelogEntry(b"a", b"9")], meta={"applied": b"7"})
    assert list(store.range()) == [(b"a", b"9"), (b"c", b"3")]
    assert store.get_meta("applied") == b"7"


def test_changelogging_store_keeps_writes_pending_until_commit(make_store):
    inner = make_store()
    store = ChangeLoggingStore(inner)
    assert store.put(b"k", b"v") == ChangelogEntry(b"k", b"v")
    assert store.get(b"k") == b"v" and inner.get(b"k") is None
    store.abort()
    assert store.get(b"k") is None
    store.put(b"k", b"v1")
    store.put(b"j", b"x")
    store.delete(b"j")
    assert store.changelog() == [ChangelogEntry(b"k", b"v1"), ChangelogEntry(b"j", None)]
    committed = store.changelog()  # the commit: pending writes reach the store only as changelog
    store.abort()
    store.restore(committed)
    assert inner.get(b"k") == b"v1" and store.changelog() == []


def test_range_merges_pending_writes_and_deletes_over_the_store(make_store):
    inner = make_store()
    inner.write([ChangelogEntry(k, k) for k in (b"a", b"c", b"e")])
    store = ChangeLoggingStore(inner)
    store.put(b"b", b"B")
    store.delete(b"c")
    store.put(b"e", b"E")
    assert list(store.range(None, b"f")) == [(b"a", b"a"), (b"b", b"B"), (b"e", b"E")]


def test_store_rebuilt_from_its_changelog_equals_the_original(make_store):
    original = ChangeLoggingStore(make_store("original"))
    changelog = []
    windows = TimeKeyedStore(original)
    for batch in range(5):
        for i in range(20):
            windows.put(batch * 1000 + i % 4, f"key-{i % 7}".encode(), f"{batch}-{i}".encode())
        windows.stream_time = batch * 1000
        for start, suffix, _ in list(windows.up_to(batch * 1000 - 1500)):
            windows.delete(start, suffix)
        committed = original.changelog()
        changelog.extend(committed)
        original.abort()
        original.restore(committed)
    rebuilt = make_store("rebuilt")
    apply_changelog(rebuilt, changelog)
    assert list(rebuilt.range()) == list(original.inner.range())
    assert TimeKeyedStore(ChangeLoggingStore(rebuilt)).stream_time == 4000


def test_time_keyed_store_scans_up_to_a_time_in_time_order(make_store):
    store = TimeKeyedStore(ChangeLoggingStore(make_store()))
    for t, k in [(30, b"b"), (10, b"z"), (20, b"a"), (10, b"a")]:
        store.put(t, k, b"v")
    store.stream_time = 99
    assert [(t, k) for t, k, _ in store.up_to(20)] == [(10, b"a"), (10, b"z"), (20, b"a")]
    assert [(t, k) for t, k, _ in store.all()] == [(10, b"a"), (10, b"z"), (20, b"a"), (30, b"b")]


def test_taking_entries_raises_a_floor_that_later_scans_start_from(make_store):
    inner = make_store()
    store = TimeKeyedStore(ChangeLoggingStore(inner))
    for t in (10, 20, 30):
        store.put(t, b"a", b"v")
    assert [t for t, _, _ in store.take_up_to(20)] == [10, 20]
    scans = []
    plain_range = store.store.range
    store.store.range = lambda lo=None, hi=None: scans.append(lo) or plain_range(lo, hi)
    assert [t for t, _, _ in store.take_up_to(25)] == []
    assert scans == [time_key(21)]  # not from key 0: deleted history is never stepped over again
    store.put(5, b"late", b"v")  # below the floor: lowers it, so the entry is still found
    assert [(t, k) for t, k, _ in store.take_up_to(30)] == [(5, b"late"), (30, b"a")]
    assert list(store.all()) == []
    # the floor is a store entry like the others: it survives a commit and a replay of the changelog
    committed = store.store.changelog()
    replayed = make_store("rebuilt")
    apply_changelog(replayed, committed)
    rebuilt = TimeKeyedStore(ChangeLoggingStore(replayed))
    rebuilt.put(31, b"b", b"v")
    assert [t for t, _, _ in rebuilt.take_up_to(29)] == [] and [t for t, _, _ in rebuilt.take_up_to(31)] == [31]


def test_rocksdb_store_survives_reopening(tmp_path):
    store = RocksDBKeyValueStore("s", tmp_path / "db")
    store.write([ChangelogEntry(b"k", b"v")], meta={"offset": b"12"})
    store.close()
    again = RocksDBKeyValueStore("s", tmp_path / "db")
    assert again.get(b"k") == b"v" and again.get_meta("offset") == b"12"
    again.close()


def test_a_store_with_pending_writes_refuses_to_restore_committed_entries(make_store):
    store = ChangeLoggingStore(make_store())
    store.put(b"k", b"pending")
    with pytest.raises(StateStoreError, match="1 pending changes: abort\\(\\) them before restoring"):
        store.restore([ChangelogEntry(b"k", b"committed")])
    store.abort()
    assert store.restore([ChangelogEntry(b"k", b"committed")], meta={"applied": b"1"}) == 1
    assert store.get(b"k") == b"committed" and store.get_meta("applied") == b"1"


def test_a_corrupt_store_is_not_mistaken_for_a_locked_one():
    from deltastreams.state._internal.rocksdb import held_elsewhere

    assert held_elsewhere(Exception("IO error: While lock file: /s/t/store/LOCK: Resource temporarily unavailable"))
    assert held_elsewhere(Exception("IO error: lock hold by current process, acquire time 1 acquiring thread 2: /s/LOCK: No locks available"))
    assert not held_elsewhere(Exception("Corruption: block checksum mismatch: stored(context removed) = 1, computed = 2"))


def test_a_rocksdb_stores_memtable_stays_bounded_under_overwrites_and_deletes(tmp_path):
    # A windowed count's churn: a few keys rewritten every batch, deleted when their window
    # closes. With RocksDB's default 64 MiB memtable all of it stayed in memory (the 2-hour soak's
    # stateful processes grew ~0.5 MB/min); the store flushes at WRITE_BUFFER_BYTES instead.
    from deltastreams.state._internal.rocksdb import WRITE_BUFFER_BYTES

    store = RocksDBKeyValueStore("windows", tmp_path / "db")
    value = b"v" * 1000
    written = 0
    for batch in range(3_000):  # ~30 MB of puts and deletes
        entries = [ChangelogEntry(time_key(batch, b"k%d" % k), value) for k in range(10)]
        entries += [ChangelogEntry(time_key(batch - 5, b"k%d" % k), None) for k in range(10)] if batch >= 5 else []
        store.write(entries, meta={"offset": str(batch).encode()})
        written += sum(len(e.key) + len(e.value or b"") for e in entries)
    memtables = store._db.property_int_value("rocksdb.cur-size-all-mem-tables")
    assert written > 4 * WRITE_BUFFER_BYTES
    assert memtables <= 2 * WRITE_BUFFER_BYTES + (1 << 20), f"{memtables:,} bytes in memtables after {written:,} bytes written"
    assert store.get(time_key(2_999, b"k3")) == value and store.get(time_key(2_990, b"k3")) is None
    store.close()


def test_a_rocksdb_stores_meta_family_flushes_on_its_own(tmp_path):
    # The meta family holds the store's positions, overwritten every batch, and RocksDB flushes a
    # family only when its own memtable is full: sized like the data's, it held ~1.5 hours of
    # positions (each task host +2.6 MB an hour in the 2-hour soak of issue 42).
    from deltastreams.state._internal.rocksdb import META_WRITE_BUFFER_BYTES

    store = RocksDBKeyValueStore("windows", tmp_path / "db")
    for batch in range(40_000):  # ~2.6 MB of position updates, as a host writes in an hour
        store.write([], meta={"offset": b"%020d" % batch, "applied": b"%020d" % batch})
    meta = store._meta.property_int_value("rocksdb.cur-size-all-mem-tables")
    assert meta <= 2 * META_WRITE_BUFFER_BYTES + (64 << 10), f"{meta:,} bytes in the meta family's memtables"
    assert store.get_meta("offset") == b"%020d" % 39_999
    store.close()
    again = RocksDBKeyValueStore("windows", tmp_path / "db")
    assert again.get_meta("applied") == b"%020d" % 39_999
    again.close()
