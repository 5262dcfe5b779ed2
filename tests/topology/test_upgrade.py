"""Which topology changes would orphan committed state (deltastreams.topology.upgrade), without Spark: stores
and repartition topics matched by name, sub-topologies by id, additions compatible."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.devtools.pageview_variants import build_variant as build_topology
from deltastreams.streams import StreamsBuilder, TimeWindows
from deltastreams.topology.upgrade import Change, Kind, TopologyRecord, lost_state, records_of

STORE_3 = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
STORE_4 = "KSTREAM-AGGREGATE-STATE-STORE-0000000004"


def test_an_unnamed_filter_upstream_of_the_count_renames_its_store_and_repartition_topic():
    committed = records_of(build_topology())
    assert lost_state(committed, build_topology(exclude_categories=["sports"])) == [
        Change(Kind.STORE, STORE_3, STORE_4, 1),
        Change(Kind.REPARTITION_TOPIC, f"{STORE_3}-repartition", f"{STORE_4}-repartition", 1),
    ]


def test_pinned_names_and_changed_predicates_are_compatible():
    assert lost_state(records_of(build_topology()), build_topology(min_duration_s=10)) == []
    pinned = records_of(build_topology(store_name="counts"))
    assert lost_state(pinned, build_topology(store_name="counts", exclude_categories=["sports"])) == []
    # The old generated name, given back by hand, finds the old store and repartition topic.
    assert lost_state(records_of(build_topology()), build_topology(store_name=STORE_3, exclude_categories=["sports"])) == []


def test_naming_a_store_that_had_a_generated_name_is_a_rename_to_that_name():
    changes = lost_state(records_of(build_topology()), build_topology(store_name="counts"))
    assert changes == [Change(Kind.STORE, STORE_3, "counts", 1), Change(Kind.REPARTITION_TOPIC, f"{STORE_3}-repartition", "counts-repartition", 1)]


def two_streams(*, clicks: str = "none", with_count: bool = True):
    """A views count, with a clicks stream built before it (``first``), after it (``last``) or not."""
    builder = StreamsBuilder()

    def add_clicks():
        builder.stream("clicks", key_type=pa.string(), value_type=pa.int64()).filter(pc.field("value") > 0).to("positive-clicks")

    if clicks == "first":
        add_clicks()
    views = builder.stream("views", key_type=pa.string(), value_type=pa.int64())
    if with_count:
        views.map((pc.field("value").cast(pa.string()), pc.field("value"))).group_by_key(name="by-value").windowed_by(
            TimeWindows.of_size(1000)
        ).count(name="counts").to_stream().to("view-counts")
    else:
        views.to("views-copy")
    if clicks == "last":
        add_clicks()
    return builder.build()


def test_a_stream_built_after_the_others_is_compatible_but_one_built_first_renumbers_sub_topologies():
    committed = records_of(two_streams())
    assert [s.source_topics for s in two_streams().subtopologies] == [("views",), ("by-value-repartition",)]
    assert lost_state(committed, two_streams(clicks="last")) == []
    # Built first, the clicks stream takes id 0: sub-topology 0's log holds positions in views,
    # sub-topology 1's in the repartition topic, and each would be read by another sub-topology.
    assert lost_state(committed, two_streams(clicks="first")) == [
        Change(Kind.POSITIONS, "views", "clicks", 0),
        Change(Kind.POSITIONS, "by-value-repartition", "views", 1),
    ]


def test_a_dropped_aggregation_loses_its_store_and_repartition_topic():
    changes = lost_state(records_of(two_streams()), two_streams(with_count=False))
    assert changes == [Change(Kind.STORE, "counts", None, 1), Change(Kind.REPARTITION_TOPIC, "by-value-repartition", None, 1)]


def test_a_record_reads_back_what_it_wrote():
    for record in records_of(build_topology(hops=3)).values():
        assert TopologyRecord.from_json(record.to_json()) == record
    assert "Sub-topology: 2" in records_of(build_topology(hops=3))[0].description
