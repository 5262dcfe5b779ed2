"""Every module of the project is imported as ``deltastreams.<package>...``. In a checkout the old
top-level names (``streams``, ``conf``, ...) still resolve (the repository root is on sys.path), and a
module imported under both would be two module objects: two sets of classes (``isinstance`` and
``except`` fail across them) and two copies of every global. The installed distribution has only
the new names, so an old import also breaks every installation."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ("conf", "sinks", "state", "topology", "streams", "jobs", "devtools")

_IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
from pathlib import Path
root, layout = Path(sys.argv[1]), sys.argv[2].split(",")
failed = {}
for package in layout:
    top = importlib.import_module(f"deltastreams.{package}")
    for module in pkgutil.walk_packages(top.__path__, prefix=f"deltastreams.{package}."):
        if module.name.endswith(".__main__"):
            continue  # runs its program when imported
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as e:  # an optional dependency (matplotlib for the plots)
            if e.name.split(".")[0] in layout or e.name.startswith("deltastreams"):
                raise
            failed[module.name] = e.name
old = sorted(name for name, m in list(sys.modules.items())
             if name.split(".")[0] in layout and getattr(m, "__file__", None) and Path(m.__file__).resolve().is_relative_to(root))
print(json.dumps({"old": old, "imported": sum(n.startswith("deltastreams.") for n in sys.modules), "skipped": failed}))
"""


def _old_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in LAYOUT]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] in LAYOUT:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import ...")
    return found


def test_no_module_or_test_imports_a_package_by_its_old_top_level_name():
    sources = [p for top in (*LAYOUT, "tests") for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts]
    offenders = [line for path in sources for line in _old_imports(path)]
    assert not offenders, "import deltastreams.<package>... instead (python ns-codemod.py rewrites them):\n" + "\n".join(offenders)


def test_importing_every_module_loads_none_under_an_old_name(tmp_path):
    # From a directory outside the checkout, with the checkout first on the path (as tests and
    # Spark's workers see it): the old names are importable, and nothing may import them.
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", _IMPORT_EVERY_MODULE, str(ROOT), ",".join(LAYOUT)], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["imported"] > 150, report  # the walk really imported the project
    assert report["old"] == [], f"imported under an old top-level name: {report['old']}"
