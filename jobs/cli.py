"""``deltastreams``: the operations commands for any application under a root, installed with the
package (``[project.scripts]``), as Kafka ships ``kafka-streams-application-reset`` beside its
clients.

    deltastreams status  --root R --application-id A [--topology app.py:build_topology] [--json]
    deltastreams reset   --root R --application-id A --to-earliest | --to-latest | --to-timestamp T | --to-version TOPIC=V
    deltastreams query   --root R --application-id A [--store S] [--key K] [--from T --to T] [--as-of-batch N]
    deltastreams rescale --root R --application-id A --topology app.py:build_topology --partitions N
    deltastreams compact --root R --application-id A
    deltastreams skip    --root R --application-id A --topic T --version V [--file F]

``--topology`` names the function that builds the application's topology, in a module
(``mypackage.app:build_topology``) or a file (``app.py:build_topology``): status, reset and
rescale need it to know the sub-topologies, internal topics and stores (the bundled examples'
are known by their application id); query reads the store alone (the topology adds window ends),
compact and skip need none. An application whose program calls ``StreamsApp.main`` has the same commands
itself (``python app.py status --root R``). Settings: ``--config FILE``, ``--set KEY=VALUE``
(an object-store root's ``storage_options.*``, ...). See docs/operations.md.
"""

from __future__ import annotations

import argparse
import sys

from deltastreams.streams.operations import OPERATIONS, add_operation_options, load_topology, run_operation

KNOWN_TOPOLOGIES = {
    "pageview": "deltastreams.jobs.pageview:build_topology",
    "enrich": "deltastreams.jobs.enrich:build_topology",
    "clicks": "deltastreams.jobs.clicks:build_topology",
    "dedup": "deltastreams.jobs.dedup:build_topology",
    "fkjoin": "deltastreams.jobs.fkjoin:build_topology",
}
"""The bundled examples' topologies, by application id."""

_NEEDS_TOPOLOGY = ("status", "reset", "rescale")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deltastreams", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in OPERATIONS:
        _add(commands.add_parser(command, help=f"{command} an application (deltastreams {command} --help)"), command)
    return _run(parser, parser.parse_args(argv))


def main_for(command: str, argv: list[str] | None, *, prog: str, description: str | None) -> int:
    """One command as a tool of its own: ``python -m deltastreams.jobs.status`` is ``deltastreams status``."""
    parser = argparse.ArgumentParser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add(parser, command)
    options = parser.parse_args(argv)
    options.command = command
    return _run(parser, options)


def _add(parser: argparse.ArgumentParser, command: str) -> None:
    add_operation_options(parser, command, None)
    if command not in ("compact", "skip"):
        parser.add_argument(
            "--topology", metavar="MODULE:FUNCTION",
            help="the function building the application's topology: mypackage.app:build_topology or path/to/app.py:build_topology "
            "(default: the bundled example of that application id)",
        )  # fmt: skip


def _run(parser: argparse.ArgumentParser, options: argparse.Namespace) -> int:
    spec = getattr(options, "topology", None) or KNOWN_TOPOLOGIES.get(options.application_id)
    if spec is None and options.command in _NEEDS_TOPOLOGY:
        parser.error(f"--topology is needed for application {options.application_id!r} (known: {', '.join(sorted(KNOWN_TOPOLOGIES))})")
    topology = None
    if spec is not None:
        try:
            topology = load_topology(spec)
        except Exception as e:  # noqa: BLE001 - the user's module: whatever it raises is said, not a traceback
            parser.error(str(e) if str(e).startswith("--topology") else f"--topology {spec}: {type(e).__name__}: {e}")
    return run_operation(options, lambda: topology)


if __name__ == "__main__":
    sys.exit(main())
