"""Where a reset (:mod:`deltastreams.streams.reset`) keeps its plan while it runs, and the start-up check that
refuses to run an application whose reset is unfinished. Unlike a rescale's plan, it may live on
an object store: it is one small file, written whole (a rename locally, a single PUT on S3)."""

from __future__ import annotations

import json
import os

import pyarrow.fs as pafs

from deltastreams.conf.errors import ConfigError
from deltastreams.sinks import filesystem_for, under_root


def plan_uri(root: str, application_id: str) -> str:
    return under_root(root, "reset", application_id, "plan.json")


def read_plan(root: str, application_id: str) -> dict | None:
    fs, path = filesystem_for(plan_uri(root, application_id))
    try:
        with fs.open_input_stream(path) as stream:
            return json.loads(stream.read().decode())
    except FileNotFoundError:
        return None


def write_plan(root: str, application_id: str, plan: dict) -> None:
    """Whole or not at all: a crash leaves no plan or the complete one."""
    fs, path = filesystem_for(plan_uri(root, application_id))
    data = json.dumps(plan).encode()
    if not isinstance(fs, pafs.LocalFileSystem):
        with fs.open_output_stream(path) as out:
            out.write(data)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def remove_plan(root: str, application_id: str) -> None:
    fs, path = filesystem_for(plan_uri(root, application_id))
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def require_no_reset(root: str, application_id: str) -> None:
    """An application must not start in the middle of a reset: its positions, internal topics and
    state may be half reset."""
    plan = read_plan(root, application_id)
    if plan is not None:
        raise ConfigError(
            f"application {application_id} has an unfinished reset ({plan_uri(root, application_id)}, to {plan['target']}): run "
            f"`python -m deltastreams.jobs.reset --root {root} --application-id {application_id}` (or the job's own `reset` subcommand) again "
            "to finish it before starting the application",
            setting="root",
        )
