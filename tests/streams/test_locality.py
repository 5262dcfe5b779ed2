"""Where the driver asks each task to run on a cluster (deltastreams.streams._internal.spark.locality)."""

from __future__ import annotations

from deltastreams.streams._internal.runtime.plan import TaskOutcome
from deltastreams.streams._internal.spark.locality import Placement

A, B, C = "executor_10.0.0.2_0", "executor_10.0.0.3_1", "executor_10.0.0.4_2"


def ran(sub: int, partition: int, where: str, *, standby: bool = False) -> TaskOutcome:
    return TaskOutcome(sub, partition, location=where, standby=standby)


def test_a_task_prefers_the_executor_of_its_last_batch_and_nothing_before_its_first():
    placement = Placement()
    assert placement.preferred("0_0") == []
    placement.record([ran(0, 0, A), ran(0, 1, B)])
    assert placement.preferred("0_0") == [A] and placement.preferred("0_1") == [B]
    placement.record([ran(0, 0, C)])  # it ran elsewhere (its executor was busy): its stores are there now
    assert placement.preferred("0_0") == [C]


def test_a_lost_executor_is_forgotten_and_its_task_prefers_its_warm_standby():
    placement = Placement(standby_replicas=1)
    placement.record([ran(0, 0, A), ran(0, 1, B), ran(1, 0, C)])
    standby = placement.standbys("0_0")
    assert len(standby) == 1 and standby[0] != A
    assert placement.standbys("0_0") == standby  # kept once chosen
    placement.retain({"1", "2"})  # executor 0 (A) is gone
    assert placement.preferred("0_0") == standby
    assert placement.preferred("0_1") == [B]


def test_standbys_are_never_the_active_executor_and_a_standby_outcome_does_not_move_the_task():
    placement = Placement(standby_replicas=2)
    placement.record([ran(0, 0, A), ran(0, 1, B), ran(0, 2, C)])
    assert sorted(placement.standbys("0_0")) == sorted([B, C])
    placement.record([ran(0, 0, B, standby=True)])
    assert placement.preferred("0_0") == [A]
    placement.record([ran(0, 0, B)])  # the standby took over: it is active now, not a standby
    assert placement.preferred("0_0") == [B] and B not in placement.standbys("0_0")


def test_without_standby_replicas_no_copies_and_local_mode_reports_no_location():
    placement = Placement()
    placement.record([ran(0, 0, A), ran(0, 1, B), TaskOutcome(0, 2)])
    assert placement.standbys("0_0") == [] and placement.preferred("0_2") == []


def test_balance_keeps_tasks_in_place_but_gives_an_executor_that_joined_its_share():
    placement = Placement()
    # Executor C started late: the first batch ran every task on A and B.
    placement.record([ran(1, p, A if p % 2 else B) for p in range(6)] + [ran(0, 0, A), ran(0, 1, B), ran(0, 2, A)])
    tasks = [f"1_{p}" for p in range(6)] + ["0_0", "0_1", "0_2"]
    placement.balance(tasks, [A, B, C])
    placed = {task: placement.place(task)[0] for task in tasks}
    for sub in ("0", "1"):
        per_executor = [sum(1 for t, e in placed.items() if t.startswith(sub + "_") and e == x) for x in (A, B, C)]
        assert max(per_executor) - min(per_executor) <= 1, (sub, placed)
    moved = [t for t in tasks if placed[t] != placement.preferred(t)[0]]
    assert len(moved) == 3, placed  # only the excess moves: 2 counting tasks and 1 source task
    assert all(placed[t] == C for t in moved)
    placement.record([ran(int(t[0]), int(t[2:]), e) for t, e in placed.items()])
    placement.balance(tasks, [A, B, C])
    assert {t: placement.place(t)[0] for t in tasks} == placed  # balanced: nothing moves again
