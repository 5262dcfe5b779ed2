import pytest

from streams import StreamsBuilder, Suppressed, TimeWindows, TopologyError


def test_aggregating_an_ungrouped_stream_names_the_operator():
    stream = StreamsBuilder().stream("in")
    for operator in ("count", "reduce", "aggregate", "windowed_by"):
        with pytest.raises(TopologyError, match=f"{operator}\\(\\) aggregates a grouped stream"):
            getattr(stream, operator)()


def test_windows_need_a_positive_size():
    grouped = StreamsBuilder().stream("in").group_by_key()
    with pytest.raises(TopologyError, match="windowed_by\\(\\) needs windows with a size"):
        grouped.windowed_by(TimeWindows())
    with pytest.raises(TopologyError, match="TimeWindows.of_size needs a positive size"):
        TimeWindows.of_size(0)


def test_grace_below_zero_is_refused():
    with pytest.raises(TopologyError, match="TimeWindows.grace cannot be negative"):
        TimeWindows.of_size(1000).grace(-1)


def test_hopping_advance_must_fit_the_size():
    with pytest.raises(TopologyError, match="advance_by must be in \\(0, size=1000\\]"):
        TimeWindows.of_size(1000).advance_by(2000)


def test_suppress_until_window_closes_needs_a_windowed_table():
    table = StreamsBuilder().stream("in").group_by_key().count()
    with pytest.raises(TopologyError, match="suppress.*needs a windowed table"):
        table.suppress(Suppressed.until_window_closes())


def test_functions_are_checked_when_the_topology_is_built():
    stream = StreamsBuilder().stream("in")
    with pytest.raises(TopologyError, match="filter\\(\\) takes a callable"):
        stream.filter(42)
    with pytest.raises(TopologyError, match="map\\(\\) takes a function of \\(key, value\\).*takes 3"):
        stream.map(lambda a, b, c: (a, b))
    with pytest.raises(TopologyError, match="aggregate\\(\\) takes a callable initializer"):
        stream.group_by_key().aggregate(0, lambda k, v, a: a)


def test_nodes_cannot_follow_a_sink_and_names_are_unique():
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.filter(lambda k, v: True, name="same")
    with pytest.raises(TopologyError, match="'same' already exists"):
        stream.filter(lambda k, v: True, name="same")


def test_empty_topology_is_refused():
    with pytest.raises(TopologyError, match="empty"):
        StreamsBuilder().build()


def test_map_values_accepts_value_only_and_key_value_functions():
    from streams import TopologyTestDriver

    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: v + 1).map_values(lambda k, v: f"{k}:{v}").to("out")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("in", "a", 1, timestamp=5)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [("a", "a:2", 5)]
