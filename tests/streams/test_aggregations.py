from deltastreams.streams import StreamsBuilder, TimeWindows, TopologyTestDriver


def test_reduce_uses_kafkas_argument_order_and_first_value_as_start():
    calls = []

    def reducer(aggregate, value):
        calls.append((aggregate, value))
        return aggregate + value

    builder = StreamsBuilder()
    builder.stream("in").group_by_key().reduce(reducer, name="sums").to_stream().to("out")
    with TopologyTestDriver(builder.build(), {"caching": False}) as driver:
        driver.pipe_inputs("in", [("k", 1, 1), ("k", 10, 2), ("j", 5, 3), ("k", 100, 4)])
        assert [(r.key, r.value) for r in driver.read_output("out")] == [("k", 1), ("k", 11), ("j", 5), ("k", 111)]
        assert calls == [(1, 10), (11, 100)]
        assert driver.fetch("sums", "k") == 111


def test_aggregate_uses_initializer_and_key_value_aggregate_order():
    builder = StreamsBuilder()
    (
        builder.stream("in")
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10))
        .aggregate(list, lambda key, value, agg: agg + [f"{key}{value}"], name="lists")
        .to_stream()
        .to("out")
    )
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_batch("in", [("k", 1, 1), ("k", 2, 2), ("k", 3, 12)])
        out = driver.read_output("out")
        assert [(r.key, r.window_start, r.value, r.timestamp) for r in out] == [("k", 0, ["k1", "k2"], 2), ("k", 10, ["k3"], 12)]


def test_group_by_repartitions_and_counts_per_new_key():
    builder = StreamsBuilder()
    builder.stream("views").group_by(lambda user, view: view["page"]).count(name="per-page").to_stream().to("out")
    with TopologyTestDriver(builder.build(), {"caching": False}) as driver:
        driver.pipe_inputs("views", [("u1", {"page": "home"}, 1), ("u2", {"page": "home"}, 2), ("u1", {"page": "faq"}, 3)])
        assert [(r.key, r.value) for r in driver.read_output("out")] == [("home", 1), ("home", 2), ("faq", 1)]


def test_flat_map_and_select_key_feed_an_aggregation():
    builder = StreamsBuilder()
    (
        builder.stream("lines")
        .flat_map(lambda k, line: [(word, 1) for word in line.split()])
        .group_by_key()
        .count(name="words")
        .to_stream()
        .to("counts")
    )
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_batch("lines", [(None, "a b a", 1), (None, "b c", 2)])
        assert {(r.key, r.value) for r in driver.read_output("counts")} == {("a", 2), ("b", 2), ("c", 1)}


def test_windowed_keys_reach_python_functions_as_windowed_tuples():
    seen = []
    builder = StreamsBuilder()
    (
        builder.stream("in")
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10))
        .count()
        .to_stream()
        .peek(lambda key, count: seen.append((key.key, key.window_start, key.window_end, count)))
        .map(lambda key, count: (f"{key.key}@{key.window_start}", count))
        .to("flat")
    )
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_input("in", "a", 1, timestamp=13)
        assert seen == [("a", 10, 20, 1)]
        assert [(r.key, r.value, r.window_start) for r in driver.read_output("flat")] == [("a@10", 1, None)]


def test_branches_writing_one_topic_interleave_in_input_order():
    builder = StreamsBuilder()
    source = builder.stream("in")
    source.filter(lambda k, v: v % 2 == 0).map_values(lambda v: f"even {v}").to("out")
    source.filter(lambda k, v: v % 2 == 1).map_values(lambda v: f"odd {v}").to("out")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_batch("in", [("k", i, i) for i in range(4)])
        assert [r.value for r in driver.read_output("out")] == ["even 0", "odd 1", "even 2", "odd 3"]
