"""The import contracts of pyproject.toml ([tool.importlinter]) hold: layers, no cycles inside a
package, a pure processing core, nothing outside a package importing its ``_internal``."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conf", "sinks", "state", "topology", "streams", "jobs", "devtools")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` over the packages under ``root`` (they shadow the installed ones)."""
    command = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()", "--no-cache", "--no-logo"]
    return subprocess.run(command, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=120)


def test_the_code_keeps_every_import_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_import_cycle_inside_a_package_breaks_the_build(tmp_path):
    # Guards against contracts that pass vacuously: the same check must fail on a real cycle.
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "deltastreams").symlink_to(".")  # as in the checkout: the packages are deltastreams.*
    nodes = tmp_path / "topology" / "nodes.py"
    nodes.write_text(nodes.read_text() + "\nfrom deltastreams.topology.graph import Topology  # noqa: E402\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "No import cycles inside a package BROKEN" in result.stdout
    assert ".nodes -> .graph" in result.stdout or ".graph -> .nodes" in result.stdout, result.stdout
