"""Every code block of the README and of docs/ runs, so that none can go stale.

A page's blocks run in order, in a directory of its own (a page marked ``<!-- continues: README.md
-->`` starts from a copy of what the README's blocks left there), as a reader would run them:

- ``python``: executed in one namespace per page (a block may use what an earlier one defined),
  in the page's directory, in this process: an application started there shares the test session's
  Spark session;
- ``pycon``: run as a doctest, in the same namespace;
- ``bash``: run with bash (``-e``), in the page's directory, with this checkout's ``.venv/bin``
  first on ``PATH`` (what ``source .venv/bin/activate`` gives a reader);
- ``console``: each ``$ command`` is run the same way, and what it prints (stdout and stderr, in
  the order a terminal shows them) must match the lines shown after it, where a line ``...``
  stands for any number of lines and ``...`` inside a line for any text;
- ``text``: output shown, not code.

``<!-- file: NAME -->`` before a block writes the block to that file instead (a program the next
blocks run or import); ``<!-- not run: REASON -->`` skips it, and every such block must say why
(a benchmark that takes many minutes, a cluster or a broker it needs, and which test runs the
same commands). Any other block fails the test.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.logging_support import logging_put_back

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
RUN = ("python", "pycon", "bash", "console")
_FENCE = re.compile(r"^```(\S*)\s*$")
_MARKER = re.compile(r"^<!--\s*(file|not run|continues):\s*(.+?)\s*-->\s*$")


@dataclass
class Block:
    page: str
    line: int
    language: str
    text: str
    file: str | None = None
    not_run: str | None = None


@dataclass
class Page:
    name: str
    blocks: list[Block]
    continues: str | None


def parse(name: str) -> Page:
    lines = (ROOT / name).read_text().splitlines()
    blocks, continues, marker, i = [], None, {}, 0
    while i < len(lines):
        found = _MARKER.match(lines[i])
        if found and found.group(1) == "continues":
            continues = found.group(2)
        elif found:
            marker = {found.group(1).replace(" ", "_"): found.group(2)}
        fence = _FENCE.match(lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(name, i + 1, fence.group(1), "\n".join(lines[i + 1 : end]) + "\n", **marker))
            marker, i = {}, end
        elif lines[i].strip() and not found:
            marker = {}  # a marker belongs to the block right after it
        i += 1
    return Page(name, blocks, continues)


@dataclass
class Ran:
    """What a page's blocks did: its directory and, per console command, what it printed."""

    workdir: Path
    outputs: dict[str, list[str]] = field(default_factory=dict)


def _environment() -> dict[str, str]:
    venv_bin = ROOT / ".venv" / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_GATEWAY", "PYSPARK_SUBMIT", "_PYSPARK"))}
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(ROOT / ".venv")
    return env


def _shell(command: str, workdir: Path) -> subprocess.CompletedProcess:
    """Runs ``command``; its stdout and stderr in one stream, in the order a terminal shows them
    (Python unbuffered, as on a terminal, where stdout is flushed line by line)."""
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command], cwd=workdir, env={**_environment(), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip


def _pattern(expected: list[str]) -> re.Pattern:
    parts = []
    for line in expected:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(piece) for piece in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def _console(block: Block, workdir: Path, ran: Ran) -> None:
    commands: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands and commands[-1][0].endswith("\\"):
            commands[-1] = (commands[-1][0][:-1] + line.strip(), commands[-1][1])
        else:
            assert commands, f"{block.page}:{block.line}: a console block starts with a '$ command' line"
            commands[-1][1].append(line)
    for command, expected in commands:
        done = _shell(command, workdir)
        printed = done.stdout
        ran.outputs[command] = printed.splitlines()
        failing = any(line.startswith("error:") for line in expected)  # a command shown failing fails
        assert (done.returncode != 0) == failing, (
            f"{block.page}:{block.line}: `{command}` exited {done.returncode}:\n{printed}"
        )
        assert _pattern(expected).fullmatch(printed), f"{block.page}:{block.line}: `{command}` printed\n{printed}\nnot\n" + "\n".join(expected)


def _python(block: Block, workdir: Path, namespace: dict) -> None:
    here = os.getcwd()
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    try:
        exec(compile(block.text, f"{block.page}:{block.line}", "exec"), namespace)  # noqa: S102 - the page's own code
    finally:
        sys.path.remove(str(workdir))
        os.chdir(here)


def _pycon(block: Block, workdir: Path, namespace: dict) -> None:
    test = doctest.DocTestParser().get_doctest(block.text, namespace, f"{block.page}:{block.line}", block.page, block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    here = os.getcwd()
    os.chdir(workdir)
    try:
        runner.run(test, clear_globs=False)
    finally:
        os.chdir(here)
    assert runner.failures == 0 and runner.tries > 0, f"{block.page}:{block.line}: {runner.failures} of {runner.tries} examples failed"


def run_page(name: str, workdir: Path, done: dict[str, Ran]) -> Ran:
    page = parse(name)
    if page.continues:
        if page.continues not in done:
            done[page.continues] = run_page(page.continues, workdir.with_name(workdir.name + "-" + Path(page.continues).stem), done)
        shutil.copytree(done[page.continues].workdir, workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ran, namespace = Ran(workdir), {"__name__": f"docs:{name}"}
    for block in page.blocks:
        if block.not_run:
            continue
        if block.file and block.file.endswith(".py"):
            sys.modules.pop(block.file.removesuffix(".py"), None)  # a program of another page's with that name
        if block.file:
            (workdir / block.file).write_text(block.text)
        elif block.language == "python":
            _python(block, workdir, namespace)
        elif block.language == "pycon":
            _pycon(block, workdir, namespace)
        elif block.language == "bash":
            done_ = _shell(block.text, workdir)
            assert done_.returncode == 0, f"{name}:{block.line}: exited {done_.returncode}:\n{done_.stdout}"
        elif block.language == "console":
            _console(block, workdir, ran)
        elif block.language != "text":
            pytest.fail(f"{name}:{block.line}: a {block.language or 'plain'} block is neither run nor marked <!-- not run: why -->")
    return ran


@pytest.fixture(scope="module")
def pages(spark, tmp_path_factory):
    """Runs pages on demand, each once (a page that continues another reuses its run). An
    application a page runs in this process sets up its logging: put back as it was after."""
    done: dict[str, Ran] = {}
    base = tmp_path_factory.mktemp("docs")

    def run(name: str) -> Ran:
        if name not in done:
            done[name] = run_page(name, base / Path(name).stem, done)
        return done[name]

    with logging_put_back():
        yield run


# -- what the pages say about themselves ----------------------------------------------------------


def test_the_readme_is_a_short_front_door_with_an_index_of_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in PAGES[1:]:
        if not page.startswith("docs/bench/"):
            assert f"({page})" in readme, f"README's index does not link {page}"


@pytest.mark.parametrize("name", PAGES)
def test_every_link_of_a_page_leads_somewhere(name):
    text = (ROOT / name).read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        linked = (ROOT / name).parent / path if path else ROOT / name
        assert linked.exists(), f"{name}: link to {target}: no {linked}"
        if anchor and linked.suffix == ".md":
            headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}
            assert anchor in headings, f"{name}: link to {target}: no heading #{anchor} in {path or name}"


@pytest.mark.parametrize("name", PAGES)
def test_every_block_is_run_or_says_why_not(name):
    for block in parse(name).blocks:
        if block.not_run is not None:
            assert len(block.not_run) > 20, f"{name}:{block.line}: say why the block is not run"
        else:
            assert block.file or block.language in (*RUN, "text"), f"{name}:{block.line}: a {block.language or 'plain'} block must run or say why not"


# -- running them --------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", [p for p in PAGES if any(b.language in RUN and not b.not_run and not b.file for b in parse(p).blocks)])
def test_the_code_blocks_of_a_page_run(pages, name):
    before = _untracked()
    pages(name)
    assert _untracked() <= before, "a block wrote into the checkout (Spark resolves relative paths in its JVM's directory)"


def _untracked() -> set[str]:
    listed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {line[3:] for line in listed.splitlines() if line.startswith("??")}


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_of_a_users_application_is_as_quiet_as_python(pages):
    """Under spark-submit, ``delta_spark = auto`` without delta-spark on the driver's class path
    used to log a 30-line ClassNotFoundException, and Spark's context start ~86 INFO lines: 128
    lines where ``python app.py`` printed the application's own. Now, past the lines spark-submit's
    JVM prints before the application's code runs, only the application's lines, as many as
    under python; and no ClassNotFoundException in the log file either."""
    python = pages("README.md").outputs["python buy_clicks.py run --root shop --until-caught-up"]
    submitted = pages("docs/applications.md").outputs["spark-submit buy_clicks.py run --root shop --until-caught-up"]
    ours = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) |^processed ")
    start = next(i for i, line in enumerate(submitted) if " INFO log file: " in line)
    before, after = submitted[:start], submitted[start:]
    assert len(before) <= 5, before  # the JVM's own: its log4j profile, a loopback host name
    assert not any(" INFO " in line or "Exception" in line for line in before), before
    assert all(ours.match(line) for line in after), after
    # Retention's lines come when its steps are due; and how the start ends differs: under python
    # the run may catch up before its embedded session is up (one line), under spark-submit the
    # session is there from the start and the query starts (two lines).
    narration = re.compile(r" INFO (retention: |query started: |application \S+ (started|caught up) in )")
    steps = [line for line in after if not narration.search(line)]
    assert len(steps) == len([line for line in python if not narration.search(line)]), (after, python)
    assert any(" INFO query started: " in line for line in after), after
    log_file = Path(after[0].split(" INFO log file: ")[1])
    assert "ClassNotFoundException" not in log_file.read_text()  # delta_spark = auto went without delta-spark, quietly
