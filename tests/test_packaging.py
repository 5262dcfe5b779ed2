"""The installed distribution claims one import name: the wheel built from this checkout puts
``deltastreams`` and its dist-info at the top level of site-packages and nothing else (no ``conf``,
``state``, ``topology``, ... to collide with other distributions), holds every module of the
checkout, and its job runs from any directory, as ``python -m deltastreams.jobs.pageview`` and as
the ``deltastreams-pageview`` script, beside the ``deltastreams`` command."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.topology.test_describe import PAGEVIEW

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ("conf", "sinks", "state", "topology", "streams", "jobs")


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A new virtual environment with the wheel of this checkout installed (--no-deps), built from a
    copy so that building writes nothing into the checkout."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    for package in LAYOUT:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("deltastreams-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    installed = subprocess.run([*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def _site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python3*/site-packages")
    return found


def test_the_wheel_installs_one_top_level_name(fresh_venv):
    names = sorted(p.name for p in _site_packages(fresh_venv).iterdir())
    assert [n for n in names if not n.endswith(".dist-info")] == ["deltastreams"], names
    assert [n for n in names if n.endswith(".dist-info")] == [n for n in names if n.startswith("deltastreams-")], names


def test_the_wheel_holds_every_module_and_the_default_configuration(fresh_venv):
    # setup.py finds the packages: a module or subpackage added to the checkout is in the wheel,
    # with deltastreams/__init__.py (a regular package once installed).
    installed = _site_packages(fresh_venv) / "deltastreams"
    checkout = {str(p.relative_to(ROOT)) for package in LAYOUT for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts}
    assert {str(p.relative_to(installed)) for p in installed.rglob("*.py")} == checkout | {"__init__.py"}
    assert (installed / "conf" / "defaults.toml").read_text() == (ROOT / "conf" / "defaults.toml").read_text()


def test_the_wheel_ships_no_benchmark_harness_test_server_or_test(fresh_venv):
    # What ships is what users run: devtools/ (benchmarks, harnesses, servers, the oracle) stays in
    # the checkout, and a module named test_* is a test, never part of the package.
    installed = _site_packages(fresh_venv) / "deltastreams"
    assert not (installed / "devtools").exists()
    assert [str(p.relative_to(installed)) for p in installed.rglob("test_*.py")] == []
    assert (ROOT / "devtools" / "bench" / "suite.py").is_file()  # guards against a vacuous pass: it exists here


def _outside_the_checkout(venv: Path, cwd: Path) -> dict[str, str]:
    """The environment of a command run with the fresh venv's Python from ``cwd``: the wheel's
    deltastreams, and the third-party packages of this test's environment (a .pth line each: .pth
    files there, such as an editable install's, are not read), never this checkout."""
    (_site_packages(venv) / "test-dependencies.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    return {**environment, "PATH": f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"}


def test_the_installed_job_runs_from_any_directory(fresh_venv, tmp_path):
    environment = _outside_the_checkout(fresh_venv, tmp_path)
    python = str(fresh_venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import deltastreams.jobs; print(*deltastreams.__path__, deltastreams.jobs.__file__)"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    installed = _site_packages(fresh_venv) / "deltastreams"
    assert where.stdout.split() == [str(installed), str(installed / "jobs" / "__init__.py")], where.stdout + where.stderr
    as_module = subprocess.run([python, "-m", "deltastreams.jobs.pageview", "describe"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert as_module.stdout == PAGEVIEW, as_module.stderr
    as_script = subprocess.run([str(fresh_venv / "bin" / "deltastreams-pageview"), "describe"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert as_script.stdout == PAGEVIEW, as_script.stderr
    # the operations commands for any application, installed with the package
    tool = subprocess.run([str(fresh_venv / "bin" / "deltastreams"), "status", "--root", str(tmp_path), "--application-id", "pageview"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert tool.returncode == 1 and tool.stderr == f"error: no deltastreams root at {tmp_path} (nothing was ever generated or run there); check --root\n", tool.stderr
