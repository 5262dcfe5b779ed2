"""The operations commands of an application on a command line: ``status``, ``reset``, ``query``,
``rescale`` and ``compact`` (:mod:`deltastreams.streams.status`, :mod:`deltastreams.streams.reset`,
:mod:`deltastreams.streams.query`, :mod:`deltastreams.streams.rescale`, changelog compaction): their
options, the settings they read (root, storage options, state directory, Kafka), and their output:
text or JSON for status, a summary for reset, CSV for query, JSON for rescale, a line per changelog
for compact. Every application's command line has them (:mod:`deltastreams.streams.command_line`),
and so has the ``deltastreams`` command, for any application (:mod:`deltastreams.jobs.cli`).

Settings are layered, later ones winning: ``conf/defaults.toml``, the application's own (in its
code), a settings file (``--config``), ``--set KEY=VALUE``, then the flags (``--root``, ...).
"""

from __future__ import annotations

import argparse
import csv
import importlib
import importlib.util
import json
import os
import sys
import tomllib
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from deltastreams.conf import RetentionConfig, StreamsConfig
from deltastreams.conf.errors import ConfigError, DeltaStreamsError, StoreQueryError
from deltastreams.topology.graph import Topology

OPERATIONS = ("status", "reset", "query", "rescale", "compact", "skip")
"""The subcommands every application's command line takes from here."""

TopologyOf = Callable[[], "Topology | None"]
"""Builds the application's topology when a command needs it (None: not known, for ``query``)."""


# -- settings -------------------------------------------------------------------------------------


def add_settings_options(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--set KEY=VALUE``, as every command takes them."""
    parser.add_argument("--config", default=None, metavar="FILE", help="a TOML file of settings (conf/defaults.toml lists them)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="any setting of conf/defaults.toml, e.g. commit_interval_ms=500 or storage_options.AWS_ENDPOINT_URL=...",
    )  # fmt: skip


def load_config(own: Mapping[str, Any], args: argparse.Namespace, flags: Mapping[str, Any] | None = None) -> StreamsConfig:
    """The application's settings: its own (``own``), then ``--config``, ``--set`` and ``flags``."""
    merged = _flat(own)
    if getattr(args, "config", None):
        merged.update(_flat(_read_settings_file(args.config)))
    for item in getattr(args, "set", None) or ():
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ConfigError(f"--set takes KEY=VALUE (a setting of conf/defaults.toml), got {item!r}", setting=key or item)
        merged[key] = value
    merged.update({k: v for k, v in (flags or {}).items() if v is not None})
    return StreamsConfig.load(merged)


_TABLES = ("retention", "kafka", "storage_options")
"""The settings that are tables (``[retention]`` in a file), merged key by key across layers as
:meth:`StreamsConfig.load` merges them."""


def _flat(settings: Mapping[str, Any]) -> dict[str, Any]:
    flat = {k: v for k, v in settings.items() if not (k in _TABLES and isinstance(v, Mapping))}
    for table in _TABLES:
        if isinstance(settings.get(table), Mapping):
            flat.update({f"{table}.{k}": v for k, v in settings[table].items()})
    return flat


def _read_settings_file(path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist", setting="file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"configuration file {path} is not valid TOML: {e}", setting="file") from None


def reach(config: StreamsConfig, *, existing: bool = True) -> StreamsConfig:
    """This process reaches the root with the settings' storage options (a bucket that does not
    exist, or credentials it refuses, are said here); with ``existing``, a root where nothing was
    ever generated or run is an error (a mistyped ``--root``), not an empty result."""
    from deltastreams.sinks import require_reachable, use_storage_options

    use_storage_options(config.storage_options)
    if existing:
        require_root(config.root)
    else:
        require_reachable(config.root)
    return config


def require_root(root: str | Path) -> None:
    """Raise a ConfigError unless something was generated or run under ``root``:

        error: no deltastreams root at /tmp/pvv (nothing was ever generated or run there); check --root

    An object-store root is listed with the process's storage options (set them first), after the
    bucket and the credentials are checked (:func:`deltastreams.sinks.require_reachable`)."""
    from deltastreams.sinks import require_reachable, root_has_topics

    require_reachable(str(root))
    if not root_has_topics(root):
        raise ConfigError(f"no deltastreams root at {root} (nothing was ever generated or run there); check --root", setting="root")


# -- the commands' options ------------------------------------------------------------------------


_HELP = {
    "status": "where the application stands: batches, lag, holder, stores, retention (read-only)",
    "reset": "move the input positions and delete internal topics, changelogs and local state (outputs are kept)",
    "query": "print a store's committed state as CSV (read-only, also while the application runs)",
    "rescale": "move a stopped application's repartition topics and their changelogs to N partitions",
    "compact": "compact a stopped application's changelog topics once",
    "skip": "move a stopped application past a file of an input topic (bad input), keeping its state (docs/bad-input.md)",
}


def add_operations(commands, application_id: str | None, *, root: str | None = None) -> dict[str, argparse.ArgumentParser]:
    """The five subcommands on ``commands`` (argparse's subparsers); ``application_id`` and
    ``root`` are the defaults of ``--application-id`` and ``--root`` (None: required). Returns the
    parsers, by command."""
    parsers = {}
    for name in OPERATIONS:
        parsers[name] = commands.add_parser(name, help=_HELP[name], description=_HELP[name])
        add_operation_options(parsers[name], name, application_id, root=root)
    return parsers


def add_operation_options(parser: argparse.ArgumentParser, command: str, application_id: str | None, *, root: str | None = None) -> None:
    """The options of ``command`` (one of :data:`OPERATIONS`) on ``parser``."""
    add_common_options(parser, application_id, root=root)
    if command == "status":
        parser.add_argument("--json", action="store_true", help="the same as JSON")
    elif command == "reset":
        to = parser.add_mutually_exclusive_group(required=True)
        to.add_argument("--to-earliest", action="store_true", help="reprocess every input topic from its start")
        to.add_argument("--to-latest", action="store_true", help="skip everything in the input topics now")
        to.add_argument("--to-timestamp", metavar="MS_OR_ISO", help="reprocess the versions committed at or after this time")
        to.add_argument("--to-version", metavar="TOPIC=V", action="append", help="reprocess the versions after V (every input topic, once each)")
        parser.add_argument("--force", action="store_true", help="reset although a holder's heartbeat is fresh: only for an instance known dead")
    elif command == "query":
        parser.add_argument("--store", help="the store (default: the application's only store; the error lists them)")
        parser.add_argument("--key", help="only this key (a window or session store: its windows or sessions)")
        parser.add_argument("--from", dest="time_from", type=int, metavar="T", help="window or session store: from this time (ms)")
        parser.add_argument("--to", dest="time_to", type=int, metavar="T", help="window or session store: up to this time (ms), inclusive")
        parser.add_argument("--from-key", help="key-value store: keys from this one (inclusive)")
        parser.add_argument("--to-key", help="key-value store: keys up to this one (inclusive)")
        parser.add_argument("--as-of-batch", type=int, metavar="N", help="the state batch N of the store's sub-topology committed (default: the last)")
    elif command == "rescale":
        parser.add_argument("--partitions", type=int, required=True, help="the new partition count of the repartition topics and their readers' changelogs")
        parser.add_argument("--force", action="store_true", help="rescale although a holder's heartbeat is fresh: only for an instance known dead")
    elif command == "compact":
        parser.add_argument(
            "--tombstone-retention-ms", type=int, default=int(RetentionConfig().tombstone_retention / timedelta(milliseconds=1)),
            help="drop tombstones this far behind their partition's stream time (default: retention.tombstone_retention_ms)",
        )  # fmt: skip
    elif command == "skip":
        parser.add_argument("--topic", required=True, help="the input topic")
        parser.add_argument("--version", required=True, type=int, help="the version that added the file")
        parser.add_argument("--file", help="the file (its path in the topic's table, as the error names it); default: every file of the version")
        parser.add_argument("--force", action="store_true", help="skip although a holder's heartbeat is fresh: only for an instance known dead")
    else:
        raise ValueError(f"not an operations command: {command!r}")


def add_common_options(parser: argparse.ArgumentParser, application_id: str | None, *, root: str | None = None) -> None:
    """``--root`` and ``--application-id`` (defaulting to ``root`` and ``application_id``, required
    where None) and the settings options."""
    where = "where the application's topics live (a directory, or s3://bucket/prefix)"
    if root is None:
        parser.add_argument("--root", required=True, help=where)
    else:
        parser.add_argument("--root", default=root, help=f"{where}; default: {root}")
    if application_id is None:
        parser.add_argument("--application-id", required=True)
    else:
        parser.add_argument("--application-id", default=application_id, help=f"default: {application_id}")
    add_settings_options(parser)


# -- running them ---------------------------------------------------------------------------------


def run_operation(args: argparse.Namespace, topology: TopologyOf, own: Mapping[str, Any] | None = None, flags: Mapping[str, Any] | None = None) -> int:
    """``args.command`` (one of :data:`OPERATIONS`) for the application whose own settings are
    ``own``, with settings from options (``flags``); an error is printed, never a traceback."""
    run = {"status": _status, "reset": _reset, "query": _query, "rescale": _rescale, "compact": _compact, "skip": _skip}[args.command]
    try:
        config = load_config(own or {}, args, {**(flags or {}), "application_id": args.application_id, "root": args.root})
        reach(config, existing=args.command != "rescale")  # rescale says a missing root itself
        return run(args, topology, config)
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if args.command == "rescale" else 1


def _status(args: argparse.Namespace, topology: TopologyOf, config: StreamsConfig) -> int:
    from deltastreams.streams.status import application_status, format_status

    status = application_status(_required(topology, "status"), config)
    print(json.dumps(status.to_dict(), indent=2) if args.json else format_status(status))
    return 0


def _reset(args: argparse.Namespace, topology: TopologyOf, config: StreamsConfig) -> int:
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
    report = reset(_required(topology, "reset"), config, target, force=args.force)
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


def _query(args: argparse.Namespace, topology: TopologyOf, config: StreamsConfig) -> int:
    """The store's committed entries as CSV with a header; the batch they are as of goes to
    stderr, so stdout is the CSV alone."""
    from deltastreams.streams.query import StoreQuery, application_stores

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


def _rescale(args: argparse.Namespace, topology: TopologyOf, config: StreamsConfig) -> int:
    from deltastreams.streams.rescale import rescale

    report = rescale(_required(topology, "rescale"), config, args.partitions, force=args.force)
    print(
        json.dumps(
            {
                "partitions": report.partitions,
                "repartition_records": report.repartition_records,
                "store_entries": report.store_entries,
                "stream_times": report.stream_times,
                "resumed": report.resumed,
                "seconds": round(report.seconds, 3),
            }
        )
    )
    return 0


def _skip(args: argparse.Namespace, topology: TopologyOf, config: StreamsConfig) -> int:
    """Record the skip (:mod:`deltastreams.streams.skip`); the topology is not needed."""
    from deltastreams.streams.skip import skip

    report = skip(config, args.topic, args.version, args.file, force=args.force)
    what = report.skip.describe()
    if report.recorded:
        subs = ", ".join(f"{sub} (batch {seq})" for sub, seq in sorted(report.recorded.items()))
        print(f"{report.application_id} skips {what}: recorded in the transaction logs of sub-topologies {subs}")
    if report.already:
        print(f"  already recorded for sub-topologies {', '.join(map(str, report.already))}")
    print(f"  why: {report.skip.reason}")
    print(f"  done in {report.seconds:.2f} s; the next run reads that version without it (its records are not processed), state kept")
    return 0


def _compact(args: argparse.Namespace, topology: TopologyOf, config: StreamsConfig) -> int:
    """The changelog compaction a running application does itself (``[retention]``), once, for a
    stopped one (e.g. before copying its data). Not against a running application: its next commit
    to the changelog would find a version it did not write and stop it."""
    from deltastreams.sinks import Topic
    from deltastreams.sinks.retention import compact_changelog

    topics = sorted(p.name for p in (Path(config.root) / "topics").glob(f"{config.application_id}-*-changelog"))
    if not topics:
        print(f"no changelog topics of '{config.application_id}' under {config.root}/topics", file=sys.stderr)
        return 1
    for name in topics:
        table = Topic.open(config.root, name).delta_table()
        result = compact_changelog(table, min_files=2, tombstone_retention=timedelta(milliseconds=args.tombstone_retention_ms))
        if result.conflict:
            print(f"{name}: changed while compacting (is the application running?); nothing done", file=sys.stderr)
            return 1
        print(
            f"{name}: {result.records_before:,} -> {result.records_after:,} records, "
            f"{result.files_removed} -> {result.files_added} files, clean watermarks {dict(result.watermarks)}"
        )
    return 0


def _required(topology: TopologyOf, command: str) -> Topology:
    built = topology()
    if built is None:
        raise ConfigError(f"{command} needs the application's topology: give --topology module:function or path/to/app.py:function", setting="topology")
    return built


def _position(value) -> str:
    if isinstance(value, dict):
        return "offsets " + ", ".join(f"{p}:{o}" for p, o in sorted(value.items()))
    return "before the first version (everything is read again)" if value < 0 else f"version {value}"


def parse_key(query, text: str | None):
    """A key typed on the command line, as the store's key type (text is a string key, digits an
    integer key, hex a binary key)."""
    import pyarrow as pa

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


# -- topologies named on a command line -----------------------------------------------------------


def load_topology(spec: str) -> Topology:
    """The topology ``spec`` names: ``module:function`` (an importable module) or
    ``path/to/app.py:function`` (a file, imported with its directory on ``sys.path``);
    ``function()`` returns the topology."""
    where, _, function = spec.rpartition(":")
    if not where or not function:
        raise ConfigError(f"--topology is module:function or path/to/app.py:function, got {spec!r}", setting="topology")
    try:
        module = _import_file(Path(where)) if where.endswith(".py") else importlib.import_module(where)
        build = getattr(module, function)
    except (ImportError, AttributeError, OSError) as e:
        raise ConfigError(f"--topology {spec}: {e}", setting="topology") from None
    topology = build()
    if not isinstance(topology, Topology):
        raise ConfigError(f"--topology {spec}: {function}() returned {type(topology).__name__}, not a Topology (builder.build())", setting="topology")
    return topology


def _import_file(path: Path):
    if not path.is_file():
        raise ImportError(f"no such file: {path}")
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # the application's own modules beside it
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
