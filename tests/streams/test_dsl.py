import pytest

from deltastreams.streams import StreamsBuilder, Suppressed, TimeWindows, TopologyError


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
    from deltastreams.streams import TopologyTestDriver

    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: v + 1).map_values(lambda k, v: f"{k}:{v}").to("out")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("in", "a", 1, timestamp=5)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [("a", "a:2", 5)]


def test_builtins_are_value_mappers_where_kafka_takes_a_value_mapper():
    from deltastreams.streams import TopologyTestDriver

    builder = StreamsBuilder()
    source = builder.stream("in")
    source.map_values(str).to("as-text")
    source.map_values(abs).to("absolute")
    source.map_values(str).map_values(len).to("digits")
    source.map_values(float).to("as-float")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("in", "k", -12, timestamp=1)
        assert [r.value for r in driver.read_output("as-text")] == ["-12"]
        assert [r.value for r in driver.read_output("absolute")] == [12]
        assert [r.value for r in driver.read_output("digits")] == [3]
        assert [r.value for r in driver.read_output("as-float")] == [-12.0]
        assert driver.dead_letters() == []


def test_key_value_builtins_still_get_the_key_and_the_value():
    from deltastreams.streams import TopologyTestDriver

    seen = []
    builder = StreamsBuilder()
    builder.stream("in").peek(lambda *record: seen.append(record)).to("out")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("in", "k", 1, timestamp=1)
    assert seen == [("k", 1)]


def test_functions_whose_arity_cannot_fit_are_refused_at_build_time():
    stream = StreamsBuilder().stream("in")
    with pytest.raises(TopologyError, match=r"map_values\(\) takes a function of \(value\) or \(key, value\).*takes 3"):
        stream.map_values(lambda a, b, c: a)
    with pytest.raises(TopologyError, match=r"filter\(\) takes a function of \(key, value\).*takes 1 positional argument$"):
        stream.filter(lambda value: True)
    with pytest.raises(TopologyError, match="requires keyword arguments flag"):
        stream.map_values(lambda value, *, flag: value)
    grouped = stream.group_by_key()
    with pytest.raises(TopologyError, match=r"reduce\(\) calls reducer\(aggregate, value\), but '.*<lambda>' takes 1 positional argument"):
        grouped.reduce(lambda value: value)
    with pytest.raises(TopologyError, match=r"aggregate\(\) calls initializer\(\), but .* takes 1 positional argument"):
        grouped.aggregate(lambda seed: seed, lambda k, v, a: a)
    with pytest.raises(TopologyError, match=r"aggregate\(\) calls aggregator\(key, value, aggregate\), but .* takes 2"):
        grouped.aggregate(list, lambda v, a: a)


def test_a_callable_with_an_optional_second_argument_fits_key_value_slots():
    stream = StreamsBuilder().stream("in")
    stream.filter(lambda key, value=None: True)  # accepted: callable as (key, value)
    stream.group_by_key().reduce(max)  # a built-in without a readable signature is not refused
