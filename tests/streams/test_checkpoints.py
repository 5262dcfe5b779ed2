"""Spark checkpoints: a fresh one per run of the query, and no more than the previous instance's kept."""

from __future__ import annotations

import os
import time

from deltastreams.streams._internal.runtime.checkpoints import fresh_checkpoint


def test_each_instance_gets_a_fresh_checkpoint_and_only_the_previous_instances_is_kept(tmp_path):
    made = []
    for instance in ("a", "b", "c", "d"):
        path = fresh_checkpoint(tmp_path, instance)
        os.makedirs(os.path.join(path, "offsets"))  # Spark creates it when the query starts
        made.append(path)
        time.sleep(0.01)
    assert len(set(made)) == 4
    # The older ones are gone; the previous instance's stays (it may still be running and must
    # end by being fenced), beside the live one's.
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted(made[2:])


def test_a_restart_of_the_query_replaces_its_own_checkpoint_and_keeps_the_previous_instances(tmp_path):
    previous = fresh_checkpoint(tmp_path, "old")
    os.makedirs(previous)
    time.sleep(0.01)
    mine = fresh_checkpoint(tmp_path, "new")
    os.makedirs(mine)
    again = fresh_checkpoint(tmp_path, "new", replacing=mine)
    os.makedirs(again)
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted([previous, again])
