"""The driver's Arrow pool: the system allocator from the application's start, unless the user
chose one through Arrow's own setting (why: deltastreams.streams._internal.runtime.arrow_memory)."""

import pyarrow as pa
import pytest

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import TopicNotFoundError
from deltastreams.jobs.pageview import build_topology
from deltastreams.streams._internal.runtime.arrow_memory import CHOSEN_BY, use_system_pool
from deltastreams.streams.app import StreamsApp


@pytest.fixture
def mimalloc_pool(monkeypatch):
    """This process on mimalloc (pyarrow's default on Linux) for the test, restored after."""
    before = pa.default_memory_pool()
    monkeypatch.delenv(CHOSEN_BY, raising=False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())
    yield
    pa.set_memory_pool(before)


def test_an_application_start_puts_the_driver_on_the_system_pool(tmp_path, mimalloc_pool):
    app = StreamsApp(build_topology(), StreamsConfig.load({"application_id": "pageview", "root": str(tmp_path)}))
    with pytest.raises(TopicNotFoundError):
        app.start()  # no input topic: fails before Spark, after the pool is chosen
    assert pa.default_memory_pool().backend_name == "system"
    assert pa.array(range(1000)).sum().as_py() == 499_500  # allocations go through it


def test_a_pool_chosen_through_arrows_setting_is_kept(monkeypatch, mimalloc_pool):
    monkeypatch.setenv(CHOSEN_BY, "mimalloc")
    use_system_pool()
    assert pa.default_memory_pool().backend_name == "mimalloc"
