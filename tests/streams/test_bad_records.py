import pytest

from deltastreams.streams import ProcessingError, RecordError, StreamsBuilder, TimeWindows, TopologyTestDriver


def pageview_like():
    builder = StreamsBuilder()
    (
        builder.stream("views")
        .filter(lambda user, view: view["duration_s"] >= 30)
        .map(lambda user, view: (view["category"], view))
        .group_by_key()
        .windowed_by(TimeWindows.of_size(1000))
        .count()
        .to_stream()
        .to("counts")
    )
    return builder.build()


def test_bad_records_go_to_the_dead_letter_topic_with_the_reason_and_the_rest_goes_on():
    with TopologyTestDriver(pageview_like()) as driver:
        driver.pipe_batch(
            "views",
            [
                ("u1", {"duration_s": 40, "category": "news"}, 1),
                ("u2", {"category": "news"}, 2),  # missing field: null in the batch
                ("u3", {"duration_s": 50, "category": None}, 3),  # null key after the map
                ("u4", {"duration_s": 45, "category": "news"}, -5),  # invalid timestamp
                ("u5", {"duration_s": 60, "category": "news"}, 4),
            ],
        )
        assert [(r.key, r.value) for r in driver.read_output("counts")] == [("news", 2)]
        dead = driver.dead_letters()
        reasons = {r.value["source_offset"]: r.value for r in dead}
        assert sorted(reasons) == [1, 2, 3]
        assert "raised TypeError" in reasons[1]["reason"] and reasons[1]["node"] == "KSTREAM-FILTER-0000000001"
        assert "null key" in reasons[2]["reason"] and reasons[2]["source_topic"] == "views"
        assert "timestamp" in reasons[3]["reason"]
        assert all(r.value["value"] is not None for r in dead)


def test_fail_policy_stops_with_an_error_naming_the_node():
    with TopologyTestDriver(pageview_like(), {"on_bad_record": "fail"}) as driver:
        with pytest.raises(ProcessingError, match="KSTREAM-FILTER-0000000001 failed.*KeyError: .duration_s.") as info:
            driver.pipe_input("views", "u2", {"category": "news"}, 2)
        assert info.value.node == "KSTREAM-FILTER-0000000001"
        with pytest.raises(RecordError, match="null key"):
            driver.pipe_input("views", "u3", {"duration_s": 50, "category": None}, 3)


def test_values_of_the_wrong_type_are_rejected_not_coerced():
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: int(v) if v.isdigit() else v).to("out")
    with TopologyTestDriver(builder.build()) as driver:
        driver.pipe_batch("in", [("a", "1", 1), ("b", "two", 2), ("c", "3", 3)])
        assert [r.value for r in driver.read_output("out")] == [1, 3]
        assert ["does not fit" in r.value["reason"] for r in driver.dead_letters()] == [True]


def test_too_late_records_can_be_routed_to_a_late_records_topic():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size(10).grace(5)).count().to_stream().to("out")
    with TopologyTestDriver(builder.build(), {"late_records_topic": "late"}) as driver:
        driver.pipe_inputs("in", [("a", "x", 1), ("a", "y", 30), ("a", "z", 2)])
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("late")] == [("a", "z", 2)]
        assert driver.dropped_records == 1
