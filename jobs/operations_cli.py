"""The ``status``, ``reset``, ``query`` and ``skip`` subcommands every job shares (:mod:`deltastreams.streams.status`,
:mod:`deltastreams.streams.reset`, :mod:`deltastreams.streams.query`, :mod:`deltastreams.streams.skip`): their
options, the settings they read (root, storage options, state directory), and their output: text
or JSON for status, a summary for reset and skip, CSV for query."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from deltastreams.conf import StreamsConfig
from deltastreams.streams import Topology


def add_status_command(commands, application_id: str | None) -> argparse.ArgumentParser:
    status = commands.add_parser("status", help="where the application stands: batches, lag, holder, stores, retention (read-only)")
    _common(status, application_id)
    status.add_argument("--json", action="store_true", help="the same as JSON")
    return status


def add_reset_command(commands, application_id: str | None) -> argparse.ArgumentParser:
    reset = commands.add_parser(
        "reset", help="move the input positions and delete internal topics, changelogs and local state (outputs are kept)"
    )
    _common(reset, application_id)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="reprocess every input topic from its start")
    to.add_argument("--to-latest", action="store_true", help="skip everything in the input topics now")
    to.add_argument("--to-timestamp", metavar="MS_OR_ISO", help="reprocess the versions committed at or after this time")
    to.add_argument("--to-version", metavar="TOPIC=V", action="append", help="reprocess the versions after V (every input topic, once each)")
    reset.add_argument("--force", action="store_true", help="reset although a holder's heartbeat is fresh: only for an instance known dead")
    return reset


def add_skip_command(commands, application_id: str | None) -> argparse.ArgumentParser:
    skip = commands.add_parser(
        "skip", help="move the stopped application past a file of an input topic (bad input), keeping its state (docs/bad-input.md)"
    )
    _common(skip, application_id)
    skip.add_argument("--topic", required=True, help="the input topic")
    skip.add_argument("--version", required=True, type=int, help="the version that added the file")
    skip.add_argument("--file", help="the file (its path in the topic's table, as the error names it); default: every file of the version")
    skip.add_argument("--force", action="store_true", help="skip although a holder's heartbeat is fresh: only for an instance known dead")
    return skip


def add_query_command(commands, application_id: str | None) -> argparse.ArgumentParser:
    query = commands.add_parser("query", help="print a store's committed state as CSV (read-only, also while the job runs)")
    _common(query, application_id)
    query.add_argument("--store", help="the store (default: the application's only store; the error lists them)")
    query.add_argument("--key", help="only this key (a window or session store: its windows or sessions)")
    query.add_argument("--from", dest="time_from", type=int, metavar="T", help="window or session store: from this time (ms)")
    query.add_argument("--to", dest="time_to", type=int, metavar="T", help="window or session store: up to this time (ms), inclusive")
    query.add_argument("--from-key", help="key-value store: keys from this one (inclusive)")
    query.add_argument("--to-key", help="key-value store: keys up to this one (inclusive)")
    query.add_argument("--as-of-batch", type=int, metavar="N", help="the state batch N of the store's sub-topology committed (default: the last)")
    return query


def _common(parser: argparse.ArgumentParser, application_id: str | None) -> None:
    parser.add_argument("--root", required=True)
    if application_id is None:
        parser.add_argument("--application-id", required=True)
    else:
        parser.add_argument("--application-id", default=application_id)
    parser.add_argument("--config", default=None, help="a TOML file of settings (storage_options, state_dir, kafka)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="a setting of conf/defaults.toml, e.g. storage_options.AWS_ENDPOINT_URL=...")


def config_of(args: argparse.Namespace, extra: dict | None = None) -> StreamsConfig:
    from deltastreams.jobs.roots import require_root
    from deltastreams.sinks import use_storage_options

    settings = {"application_id": args.application_id, "root": args.root, **(extra or {})}
    for item in args.set or ():
        key, _, value = item.partition("=")
        settings[key] = value
    config = StreamsConfig.load(settings, file=args.config)
    use_storage_options(config.storage_options)
    require_root(config.root)  # status and reset of a mistyped root say so (not "never ran")
    return config


def run_status(args: argparse.Namespace, topology: Callable[[], Topology], extra: dict | None = None) -> int:
    from deltastreams.streams.status import application_status, format_status

    status = application_status(topology(), config_of(args, extra))
    print(json.dumps(status.to_dict(), indent=2) if args.json else format_status(status))
    return 0


def run_reset(args: argparse.Namespace, topology: Callable[[], Topology], extra: dict | None = None) -> int:
    from deltastreams.streams.reset import ResetError, ResetTarget, parse_timestamp, reset

    versions = None
    if args.to_version:
        versions = {}
        for item in args.to_version:
            topic, _, version = item.rpartition("=")
            if not topic or not version.lstrip("-").isdigit():
                raise ResetError(f"--to-version takes TOPIC=VERSION (a whole number), got {item!r}")
            versions[topic] = int(version)
    target = ResetTarget(
        earliest=args.to_earliest,
        latest=args.to_latest,
        timestamp_ms=parse_timestamp(args.to_timestamp) if args.to_timestamp else None,
        versions=versions,
    )
    report = reset(topology(), config_of(args, extra), target, force=args.force)
    if report.resumed:
        print(f"finished an interrupted reset of {report.application_id} to {report.target} (run again for another target)")
    else:
        print(f"reset {report.application_id} to {report.target}")
    for topic, position in sorted(report.positions.items()):
        before = report.previous.get(topic)
        was = f" (was {_position(before)})" if before is not None else ""
        print(f"  input {topic}: position {_position(position)}{was}")
    for sub, seq in sorted(report.decided.items()):
        print(f"  sub-topology {sub}: new positions recorded as batch {seq}")
    print("  deleted internal topics and changelogs: " + (", ".join(report.deleted_topics) or "none"))
    print(f"  deleted local state: {report.deleted_state or 'none on this machine'}")
    print(
        "  kept output topics: " + (", ".join(report.kept_outputs) or "none")
        + " (as Kafka's reset tool does: reprocessed results are appended after the old ones; delete them first if you want only the new)"
    )  # fmt: skip
    print(f"  done in {report.seconds:.2f} s; the next run starts from these positions with empty state")
    return 0


def run_skip(args: argparse.Namespace, topology: Callable[[], Topology], extra: dict | None = None) -> int:
    """Record the skip (:mod:`deltastreams.streams.skip`); the topology is not needed."""
    from deltastreams.streams.skip import skip

    report = skip(config_of(args, extra), args.topic, args.version, args.file, force=args.force)
    what = report.skip.describe()
    if report.recorded:
        subs = ", ".join(f"{sub} (batch {seq})" for sub, seq in sorted(report.recorded.items()))
        print(f"{report.application_id} skips {what}: recorded in the transaction logs of sub-topologies {subs}")
    if report.already:
        print(f"  already recorded for sub-topologies {', '.join(map(str, report.already))}")
    print(f"  why: {report.skip.reason}")
    print(f"  done in {report.seconds:.2f} s; the next run reads that version without it (its records are not processed), state kept")
    return 0


def run_query(args: argparse.Namespace, topology: Callable[[], Topology], extra: dict | None = None) -> int:
    """Print the store's committed entries as CSV with a header; the batch they are as of goes to
    stderr, so stdout is the CSV alone."""
    import csv

    from deltastreams.conf.errors import StoreQueryError
    from deltastreams.streams.query import StoreQuery, application_stores

    config = config_of(args, extra)
    store = args.store
    if store is None:
        stores = sorted(application_stores(config.root, config.application_id))
        if len(stores) != 1:
            raise StoreQueryError(
                f"application '{config.application_id}' has {len(stores)} stores: name one with --store ({stores or 'none committed yet'})",
                store="",
            )
        store = stores[0]
    if (args.from_key is not None or args.to_key is not None) and args.key is not None:
        raise StoreQueryError("--key and --from-key/--to-key are alternatives: one key, or a range of keys", store=store)
    query = StoreQuery(config.root, config.application_id, store, as_of_batch=args.as_of_batch, window_size_ms=window_size_of(topology(), store))
    table = query.table(
        parse_key(query, args.key), args.time_from, args.time_to, from_key=parse_key(query, args.from_key), to_key=parse_key(query, args.to_key)
    )
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
        writer.writerow(row)
    print(f"store {store} of {config.application_id}: {table.num_rows} entries as of batch {query.batch} "
          f"of sub-topology {query.location.subtopology}", file=sys.stderr)  # fmt: skip
    return 0


def parse_key(query, text: str | None):
    """A key typed on the command line, as the store's key type (text is a string key, digits an
    integer key, hex a binary key)."""
    import pyarrow as pa

    from deltastreams.conf.errors import StoreQueryError

    if text is None:
        return None
    key_type = query.key_type
    try:
        if pa.types.is_integer(key_type):
            return int(text)
        if pa.types.is_floating(key_type):
            return float(text)
        if pa.types.is_boolean(key_type):
            return {"true": True, "false": False}[text.lower()]
        if pa.types.is_binary(key_type) or pa.types.is_large_binary(key_type):
            return bytes.fromhex(text)
        if pa.types.is_string(key_type) or pa.types.is_large_string(key_type):
            return text
        return json.loads(text)  # a composite key, as its JSON
    except (ValueError, KeyError):
        raise StoreQueryError(f"--key {text!r} is not a key of store '{query.store}', whose keys are {key_type}", store=query.store) from None
def window_size_of(topology: Topology | None, store: str) -> int | None:
    """The size of the windows the topology keeps in ``store`` (None: not a window store, or no topology)."""
    for node in topology.nodes.values() if topology is not None else ():
        windows = getattr(node, "windows", None)
        if store in node.stores and windows is not None and hasattr(windows, "size_ms"):
            return windows.size_ms
    return None


OPERATIONS_COMMANDS = ("status", "reset", "query", "skip")
"""The subcommands every job's command line takes from here (a job dispatches these to
:func:`run_operations_command`)."""


def run_operations_command(args: argparse.Namespace, topology: Callable[[], Topology], extra: dict | None = None) -> int:
    """``status``, ``reset`` or ``query``, as ``args.command`` says; an error is printed, never a traceback."""
    from deltastreams.conf.errors import DeltaStreamsError

    run = {"status": run_status, "reset": run_reset, "query": run_query, "skip": run_skip}[args.command]
    try:
        return run(args, topology, extra)
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _position(value) -> str:
    if isinstance(value, dict):
        return "offsets " + ", ".join(f"{p}:{o}" for p, o in sorted(value.items()))
    return "before the first version (everything is read again)" if value < 0 else f"version {value}"


def main_for(prog: str, doc: str | None, argv: list[str] | None, command: str) -> int:
    """``python -m deltastreams.jobs.status`` / ``deltastreams.jobs.reset``: any application, its topology named by
    ``--topology module:function`` (or known from its application id)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    {"status": add_status_command, "reset": add_reset_command, "query": add_query_command, "skip": add_skip_command}[command](_OneCommand(parser), None)
    parser.add_argument("--topology", help="module:function returning the application's topology (default: the example of that application id)")
    args = parser.parse_args(argv)
    args.command = command
    spec = args.topology or KNOWN_TOPOLOGIES.get(args.application_id)
    if spec is None and command in ("query", "skip"):  # the query reads the store alone (a topology only adds window ends); skip needs none
        return run_operations_command(args, lambda: None)
    if spec is None:
        parser.error(f"--topology module:function is needed for application {args.application_id!r} (known: {', '.join(sorted(KNOWN_TOPOLOGIES))})")
    try:
        topology = _load_topology(spec)
    except (ImportError, AttributeError) as e:
        parser.error(f"--topology {spec}: {e}")
    try:
        return run_operations_command(args, lambda: topology)
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


class _OneCommand:
    """Stands for argparse's subparsers where the tool is the command: its options go on the tool's parser."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return self.parser


KNOWN_TOPOLOGIES = {
    "pageview": "deltastreams.jobs.pageview:build_topology",
    "enrich": "deltastreams.jobs.enrich:build_topology",
    "clicks": "deltastreams.jobs.clicks:build_topology",
    "dedup": "deltastreams.jobs.dedup:build_topology",
}
"""The examples' topologies, by application id."""


def _load_topology(spec: str) -> Topology:
    import importlib

    module, _, function = spec.partition(":")
    if not function:
        raise SystemExit(f"error: --topology is module:function, got {spec!r}")
    return getattr(importlib.import_module(module), function)()
