"""The applications in jobs/ describe themselves exactly as Kafka Streams 4.3.1 describes the same
topology written with its own DSL (jvm/.../oracle/JobTopologies.java): node names, sub-topologies,
stores, topics, successor order. Topic names and options come from the jobs' own modules."""

from __future__ import annotations

import pytest

from deltastreams.jobs import clicks, dedup, enrich, pageview
from deltastreams.devtools.differential.scenarios import Scenario
from deltastreams.devtools.pageview_variants import build_variant


def kafka_describe(oracle, job: str, params: dict) -> str:
    result = oracle.run(Scenario(f"describe-{job}", f"job-{job}", params, True, []))
    assert result.get("error") is None, result["error"]
    return result["describe"]


@pytest.mark.parametrize(
    ("emit", "hops"),
    [("revisions", 2), ("final", 2), ("revisions", 3), ("final", 3)],
)
def test_pageview_describes_as_kafka_streams(oracle, emit, hops):
    params = {"input": pageview.INPUT_TOPIC, "output": pageview.OUTPUT_TOPIC, "window_ms": 5000, "grace_ms": 10_000, "emit": emit, "hops": hops}
    topology = pageview.build_topology(emit=emit) if hops == 2 else build_variant(emit=emit, hops=hops)  # three sub-topologies: the benchmarks' variant
    ours = str(topology.describe())
    assert ours == kafka_describe(oracle, "pageview", params)


def test_enrich_describes_as_kafka_streams(oracle):
    params = {"views": enrich.VIEWS_TOPIC, "users": enrich.USERS_TOPIC, "output": enrich.OUTPUT_TOPIC, "window_ms": 5000, "grace_ms": 10_000}
    assert str(enrich.build_topology().describe()) == kafka_describe(oracle, "enrich", params)


def test_clicks_describes_as_kafka_streams(oracle):
    params = {
        "impressions": clicks.IMPRESSIONS_TOPIC, "clicks": clicks.CLICKS_TOPIC, "output": clicks.OUTPUT_TOPIC,
        "window_ms": clicks.WINDOW_MS, "grace_ms": clicks.GRACE_MS,
    }  # fmt: skip
    assert str(clicks.build_topology().describe()) == kafka_describe(oracle, "clicks", params)


@pytest.mark.parametrize("vectorised", [False, True])
def test_dedup_describes_as_kafka_streams(oracle, vectorised):
    store = dedup.TYPED_STORE if vectorised else dedup.STORE
    params = {"input": dedup.INPUT_TOPIC, "output": dedup.OUTPUT_TOPIC, "store": store}
    assert str(dedup.build_topology(vectorised=vectorised).describe()) == kafka_describe(oracle, "dedup", params)
