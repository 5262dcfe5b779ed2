"""Spark checkpoints under exactly_once: one per instance (epoch), and no more than two kept."""

from __future__ import annotations

import os

from conf import StreamsConfig
from jobs.pageview import build_topology
from streams._internal.runtime.commit import ExactlyOnceCommitter
from streams._internal.runtime.topics import TopicRegistry


def start_instance(root) -> ExactlyOnceCommitter:
    """What StreamsApp.start does before its queries: register, recover, then Spark writes the checkpoint."""
    config = StreamsConfig.load({"application_id": "pageview", "root": str(root)})
    topology = build_topology()
    committer = ExactlyOnceCommitter(TopicRegistry(config, topology))
    committer.recover(topology.subtopologies)
    for sub in topology.subtopologies:
        os.makedirs(os.path.join(committer.checkpoint_dir(sub.id), "offsets"))
    return committer


def test_each_instance_gets_its_own_checkpoint_and_those_two_epochs_back_are_deleted(tmp_path):
    instances = [start_instance(tmp_path) for _ in range(4)]
    checkpoints = tmp_path / "checkpoints" / "pageview"

    for sub in (0, 1):  # each sub-topology has its own log, hence its own epochs
        epochs = [instance.logs[sub].epoch for instance in instances]
        assert epochs == list(range(epochs[0], epochs[0] + 4))
        kept = sorted(name for name in os.listdir(checkpoints) if name.startswith(f"subtopology-{sub}-"))
        # The two oldest are gone; the previous instance's stays (it may still be running and
        # must end by being fenced), beside the live one's.
        assert kept == [f"subtopology-{sub}-epoch-{epoch}" for epoch in epochs[2:]]
        assert instances[-1].checkpoint_dir(sub) == str(checkpoints / f"subtopology-{sub}-epoch-{epochs[3]}")
