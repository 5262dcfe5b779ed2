"""The fkjoin example's pandas reference (what its crash harness checks against) against the
job's topology on the test driver: the same generated rounds, the same joined table."""

from __future__ import annotations

from deltastreams.jobs import fkjoin
from deltastreams.devtools.harness import enrich as enrich_harness
from deltastreams.sinks import Topic
from deltastreams.streams import TopologyTestDriver


def test_reference_equals_the_joined_table_the_topology_ends_with(tmp_path):
    root = str(tmp_path)
    fkjoin.generate(root, rounds=1, seed=4)
    records = []
    for topic in (fkjoin.ORDERS, fkjoin.CUSTOMERS):
        table = Topic.open(root, topic).read()
        for key, value, ts, part, offset in zip(*(table[c].to_pylist() for c in ("key", "value", "timestamp", "partition", "offset")), strict=True):
            records.append((ts, topic, part, offset, key, value))
    with TopologyTestDriver(fkjoin.build_topology(), {"caching": False}) as driver:
        for ts, topic, _, _, key, value in sorted(records):
            driver.pipe_input(topic, key, value, ts)
        latest: dict = {}
        for r in driver.read_output(fkjoin.OUTPUT_TOPIC):
            latest[r.key] = r.value
    joined = {k: v for k, v in latest.items() if v is not None}
    expected = fkjoin.reference(root)
    assert joined == expected and len(expected) > 20
    assert len(set(joined.values())) == len(joined)  # every value is new: a repeat would be a duplicate


def test_harness_runs_the_fkjoin_job_without_caching():
    command = enrich_harness.command("/r", "fkjoin")
    assert command[2] == "deltastreams.jobs.fkjoin" and ["--set", "caching=false"] == command[-2:]
