"""Variants of the pageview topology (:mod:`deltastreams.jobs.pageview`) that tests and benchmarks
need and the tutorial job does not show: its filter and map written as Python callables or Spark
Columns instead of pyarrow expressions (``functions``), one more re-key and repartition (``hops=3``,
three sub-topologies: what a hop costs), one more unnamed filter before the grouping
(``exclude_categories``: it shifts the generated store name, for topology upgrades), and a named
count store (``store_name``).

With the defaults it is the job's own topology, node for node (``tests/jobs/test_pageview_variants.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.jobs.pageview import INPUT_TOPIC, OUTPUT_TOPIC
from deltastreams.jobs.pageview_data import VALUE_TYPE
from deltastreams.streams import StreamsBuilder, Suppressed, TimeWindows, Topology


def build_variant(
    *,
    window_ms: int = 5000,
    grace_ms: int = 10_000,
    min_duration_s: int = 30,
    emit: str = "revisions",
    functions: str = "arrow",
    hops: int = 2,
    exclude_categories: Sequence[str] = (),
    store_name: str | None = None,
) -> Topology:
    """``functions``: ``arrow`` (pyarrow expressions, the job's), ``python`` (callables, per record)
    or ``column`` (Spark Columns, compiled to Catalyst). ``hops=3`` first re-keys by page and
    repartitions, then re-keys by category. ``exclude_categories``: one more (unnamed) filter
    before the grouping, dropping those categories; ``store_name`` names the count's store (and so
    its repartition topic), which then keeps its name whatever operators are added before it."""
    if functions == "python":
        long_enough = lambda user_id, view: view["duration_s"] >= min_duration_s  # noqa: E731
        by_category = lambda user_id, view: (view["category"], view)  # noqa: E731
    elif functions == "arrow":
        long_enough = pc.field("value", "duration_s") >= min_duration_s
        by_category = (pc.field("value", "category"), pc.field("value"))
    elif functions == "column":
        from pyspark.sql import functions as F

        long_enough = F.col("value.duration_s") >= min_duration_s
        by_category = (F.col("value.category"), F.col("value"))
    else:
        raise ValueError(f"functions is python, arrow or column, got {functions!r}")
    if hops not in (2, 3):
        raise ValueError(f"hops is 2 or 3, got {hops!r}")
    builder = StreamsBuilder()
    views = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=VALUE_TYPE).filter(long_enough)
    if hops == 3:
        by_page = (pc.field("value", "page_id"), pc.field("value")) if functions == "arrow" else (lambda user_id, view: (view["page_id"], view))
        if functions == "column":
            raise ValueError("hops=3 re-keys after a repartition, where Spark Column functions do not run; use arrow or python")
        views = views.map(by_page).repartition(name="pageviews-by-page")
    by_category_views = views.map(by_category)
    if exclude_categories:
        excluded = list(exclude_categories)
        kept = ~pc.field("key").isin(excluded) if functions == "arrow" else (lambda category, view: category not in excluded)
        by_category_views = by_category_views.filter(kept)
    counts = by_category_views.group_by_key().windowed_by(TimeWindows.of_size(window_ms).grace(grace_ms)).count(name=store_name)
    if emit == "final":
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to(OUTPUT_TOPIC, key_column="category", value_column="count")
    return builder.build()
