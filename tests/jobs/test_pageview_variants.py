"""The variants tests and benchmarks build (devtools/pageview_variants.py) start from the pageview
job's own topology: with the defaults they are the same topology, so what they measure or check
is the job's."""

import pytest

from deltastreams.devtools.pageview_variants import build_variant
from deltastreams.jobs.pageview import build_topology


@pytest.mark.parametrize("emit", ["revisions", "final"])
def test_the_default_variant_is_the_jobs_topology(emit):
    ours, job = build_variant(emit=emit, window_ms=2000, grace_ms=1000, min_duration_s=10), build_topology(emit=emit, window_ms=2000, grace_ms=1000, min_duration_s=10)
    assert str(ours.describe()) == str(job.describe())
    assert ours.source_topics == job.source_topics and ours.internal_topics == job.internal_topics


def test_variants_change_what_they_say():
    assert "Sub-topology: 2" in str(build_variant(hops=3).describe())
    assert "KSTREAM-AGGREGATE-STATE-STORE-0000000004" in str(build_variant(exclude_categories=["sports"]).describe())
    assert "counts-repartition" in str(build_variant(store_name="counts").describe())
