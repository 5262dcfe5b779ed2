"""Where a rescale (:mod:`deltastreams.streams.rescale`) keeps its plan, and the start-up check that refuses to
run an application whose rescale is unfinished."""

from __future__ import annotations

import json
import os
from pathlib import Path

from deltastreams.conf.errors import ConfigError


def rescale_dir(root: str, application_id: str) -> Path:
    return Path(root) / "rescale" / application_id


def plan_path(root: str, application_id: str) -> Path:
    return rescale_dir(root, application_id) / "plan.json"


def read_plan(root: str, application_id: str) -> dict | None:
    path = plan_path(root, application_id)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def write_plan(root: str, application_id: str, plan: dict) -> None:
    """Atomically (a rename): a crash leaves the old plan or the new one, never half of one."""
    path = plan_path(root, application_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"plan.json.{os.getpid()}.tmp")
    with open(tmp, "w") as out:
        out.write(json.dumps(plan))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def require_no_rescale(root: str, application_id: str) -> None:
    """An application must not start in the middle of a rescale: its topics may be half switched."""
    if "://" in root:
        return  # rescale refuses object stores: no plan can be there
    plan = read_plan(root, application_id)
    if plan is not None:
        raise ConfigError(
            f"application {application_id} has an unfinished rescale to {plan['partitions']} partitions ({plan_path(root, application_id)}, "
            f"phase {plan['phase']}): run `python -m deltastreams.jobs.rescale --root {root} --application-id {application_id} --partitions "
            f"{plan['partitions']}` again to finish it before starting the application",
            setting="root",
        )
