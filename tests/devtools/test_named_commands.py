"""Every ``python -m deltastreams...`` command the README and docs/ name exists and answers ``--help``
(each is also run at its smallest size by a smoke test: tests/devtools/test_bench_commands.py,
tests/devtools/test_harness_and_server_commands.py and the job tests), so a renamed or moved command
cannot leave the documentation pointing at nothing."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
COMMAND = re.compile(r"python -m (deltastreams(?:\.[a-z_0-9]+)+)(?![.\w<])")


def named_commands() -> dict[str, list[str]]:
    """Module -> the documents naming it as ``python -m <module>``."""
    named: dict[str, list[str]] = {}
    for document in DOCUMENTS:
        for module in COMMAND.findall(document.read_text()):
            named.setdefault(module, []).append(str(document.relative_to(ROOT)))
    return named


def main_of(module: str):
    """The ``main`` a ``python -m`` of ``module`` runs (a package runs its ``__main__``'s)."""
    imported = importlib.import_module(module)
    if hasattr(imported, "__path__"):  # imported under its own name, __main__ does not run its program
        imported = importlib.import_module(f"{module}.__main__")
    return imported.main


def test_the_documents_name_commands_at_all():
    assert len(named_commands()) >= 10  # guards against a pattern that matches nothing


@pytest.mark.parametrize("module", sorted(named_commands()))
def test_a_named_command_exists_and_answers_help(module):
    main = main_of(module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0, f"{module} --help exited {exited.value.code}; named in {named_commands()[module]}"
    assert "usage:" in out.getvalue()
