"""An application's command line: what ``StreamsApp.main`` gives a program, and what every
bundled job (``python -m deltastreams.jobs.pageview ...``) is made of.

    # buy_clicks.py
    if __name__ == "__main__":
        StreamsApp.main(build_topology, {"application_id": "buy-clicks"})

    python buy_clicks.py run --root /data --until-caught-up        # or: spark-submit buy_clicks.py run ...
    python buy_clicks.py describe
    python buy_clicks.py results --root /data [--latest]
    python buy_clicks.py status|reset|query|rescale|compact --root /data ...

``run`` starts the application with a line per micro-batch on the console and details in a log
file (:mod:`deltastreams.streams.console`), stops it between micro-batches on SIGTERM or Ctrl-C,
and says a failure in three lines (exit code 1). The operations commands are those of
:mod:`deltastreams.streams.operations`. Settings: the application's own (in its code), then a
settings file (``--config``), ``--set KEY=VALUE``, then the flags.

A job adds its own commands and options before :meth:`CommandLine.main`::

    cli = StreamsApp.command_line(build_topology, {"application_id": "pageview"}, description=__doc__)
    cli.add_option("--window-ms", type=int, default=5000, topology=True)   # build_topology(options) reads it
    generate = cli.add_command("generate", "append synthetic pageviews", do_generate)
    generate.add_argument("--events", type=int)
    sys.exit(cli.main())
"""

from __future__ import annotations

import argparse
import csv
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from deltastreams.conf import StreamsConfig
from deltastreams.conf.errors import ConfigError, DeltaStreamsError
from deltastreams.streams._internal.spark.session_start import prepare_task_hosts
from deltastreams.streams.console import default_log_file, run_from_terminal
from deltastreams.streams.operations import OPERATIONS, add_common_options, add_operations, add_settings_options, load_config, reach, run_operation
from deltastreams.topology.graph import Topology

__all__ = ["APPLICATION_COMMANDS", "CommandLine"]

APPLICATION_COMMANDS = ("run", "describe", "results", *OPERATIONS)
"""The commands every application's command line has."""
_TOPOLOGY_COMMANDS = ("run", "describe", "status", "reset", "query", "rescale")
"""The commands that build the topology (and so take the options that shape it)."""
_SETTINGS_COMMANDS = ("run", *OPERATIONS)
"""The commands that read the application's settings (and so take options that give some)."""

Handler = Callable[[argparse.Namespace], "int | None"]
OptionSettings = Callable[[argparse.Namespace], "tuple[str, Mapping[str, Any]] | None"]


class CommandLine:
    """The commands of one application; ``app_class`` is :class:`~deltastreams.streams.StreamsApp`
    (given, not imported: the application's module builds on this one)."""

    def __init__(
        self, app_class, topology, settings: Mapping[str, Any], *, prog: str | None = None, description: str | None = None
    ) -> None:
        if "application_id" not in settings:
            raise ConfigError("the application's settings need its application_id, e.g. {'application_id': 'buy-clicks'}", setting="application_id")
        self.app_class = app_class
        self.topology = topology
        """A Topology, or a function returning one: called with no argument, or with the parsed
        options (those added with ``topology=True``) if it has a required positional parameter."""
        self.settings = dict(settings)
        self.application_id = str(settings["application_id"])
        self.parser = argparse.ArgumentParser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
        self._commands = self.parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        self._parsers: dict[str, argparse.ArgumentParser] = {}
        self._handlers: dict[str, Handler] = {}
        self._option_settings: list[OptionSettings] = []
        """Per option that gives settings: its flag and the settings, when given."""
        self._topology_options: list[tuple[tuple[str, ...], dict]] = []
        self._add_run()
        self._add("describe", "print the topology, in Kafka Streams' format", self._describe)
        for name, parser in add_operations(self._commands, self.application_id, root=self._own_root).items():
            self._parsers[name] = parser
            self._handlers[name] = self._operation

    @property
    def _own_root(self) -> str | None:
        root = self.settings.get("root")
        return None if root is None else str(root)

    # -- what a job adds -------------------------------------------------------------------------

    def add_command(self, name: str, help: str, handler: Handler) -> argparse.ArgumentParser:
        """A command of the job's own (``generate``), or its own ``results`` (instead of the
        standard one, which prints an output topic's records); ``handler(options)`` returns the
        exit code (None: 0). Returns its parser, for its options; :meth:`config` gives it the
        application's settings."""
        if name in self._parsers:
            raise ValueError(f"the command line has a command {name!r} already")
        return self._add(name, help, handler)

    def add_option(
        self,
        *flags: str,
        topology: bool = False,
        settings: Callable[[Any], Mapping[str, Any]] | None = None,
        commands: tuple[str, ...] | None = None,
        **kwargs,
    ) -> None:
        """An option of several commands at once: ``topology=True``, one that shapes the topology
        (on every command that builds it: the topology function reads it from its options);
        ``settings``, one that gives settings (``settings(value)`` returns them; on ``run`` and
        the operations commands, and ignored when the option is not given). ``commands`` narrows
        the commands; ``kwargs`` are argparse's."""
        if commands is None:
            commands = _TOPOLOGY_COMMANDS if topology else _SETTINGS_COMMANDS
            if topology:  # the standard results command, added last, builds the topology too
                self._topology_options.append((flags, kwargs))
        dest = None
        for name in commands:
            action = self._parsers[name].add_argument(*flags, **kwargs)
            dest = action.dest
        if settings is not None:
            flag = flags[-1]
            self._option_settings.append(lambda options: (flag, settings(getattr(options, dest))) if getattr(options, dest, None) not in (None, False) else None)

    def config(self, options: argparse.Namespace, *, existing_root: bool = False, **flags) -> StreamsConfig:
        """The application's settings for a job's own command: its own, then ``--config`` and
        ``--set`` (when the command has them), then ``flags``; the root is reached with them (and
        with ``existing_root``, must hold something already)."""
        config = load_config(self.settings, options, {"application_id": getattr(options, "application_id", None), "root": getattr(options, "root", None), **flags})
        return reach(config, existing=existing_root)

    def build_topology(self, options: argparse.Namespace | None = None) -> Topology:
        if isinstance(self.topology, Topology):
            return self.topology
        try:  # a function with a required positional parameter gets the options
            parameters = inspect.signature(self.topology).parameters.values()
            takes_options = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in parameters)
        except (TypeError, ValueError):  # a callable without a signature: called as it is
            takes_options = False
        topology = self.topology(options) if takes_options else self.topology()
        if not isinstance(topology, Topology):
            raise ConfigError(f"the application's topology function returned {type(topology).__name__}, not a Topology (builder.build())", setting="topology")
        return topology

    # -- running ---------------------------------------------------------------------------------

    def main(self, argv: list[str] | None = None) -> int:
        """Parse ``argv`` (default: the process's), run the command, return its exit code. An
        error is said in a line (or three, for ``run``), never as a traceback."""
        if "results" not in self._parsers:
            self._add_results()
        options = self.parser.parse_args(argv)
        try:
            code = self._handlers[options.command](options)
        except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except DeltaStreamsError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0 if code is None else code

    def _add(self, name: str, help: str, handler: Handler) -> argparse.ArgumentParser:
        parser = self._commands.add_parser(name, help=help, description=help, formatter_class=argparse.RawDescriptionHelpFormatter)
        self._parsers[name] = parser
        self._handlers[name] = handler
        return parser

    def _settings_of_options(self, options: argparse.Namespace) -> dict[str, Any]:
        settings: dict[str, Any] = {}
        set_by: dict[str, str] = {}
        for given in self._option_settings:
            found = given(options)
            if found is None:
                continue
            flag, values = found
            for key, value in values.items():
                if key in settings and settings[key] != value:
                    raise ConfigError(f"{set_by[key]} and {flag} give {key} different values ({settings[key]!r}, {value!r}); give one", setting=key)
                settings[key], set_by[key] = value, flag
        return settings

    # -- the standard commands -------------------------------------------------------------------

    def _add_run(self) -> None:
        run = self._add("run", "run the application on Spark until stopped (SIGTERM, Ctrl-C), caught up or failed", self._run)
        add_common_options(run, self.application_id, root=self._own_root)
        try:
            defaults = StreamsConfig.load(self.settings)
        except DeltaStreamsError:  # said when a command loads them; the help shows the usual defaults
            defaults = StreamsConfig(application_id="app")
        run.add_argument("--until-caught-up", action="store_true", help="stop once all input present at start is processed")
        run.add_argument("--timeout-s", type=float, default=None, help="stop after this many seconds (with --until-caught-up: fail if not caught up)")
        run.add_argument(
            "--guarantee", choices=("exactly_once", "at_least_once"),
            help=f"processing_guarantee (default: {defaults.processing_guarantee.value})",
        )  # fmt: skip
        run.add_argument("--commit-interval-ms", type=int, help=f"commit_interval_ms: how often a micro-batch commits (default: {defaults.commit_interval_ms})")
        run.add_argument("--max-records-per-batch", type=int, help=f"max_records_per_batch, per input topic (default: {defaults.max_records_per_batch:,})")
        run.add_argument("--partitions", type=int, help=f"num_partitions of repartition topics (default: {defaults.num_partitions or 'as many as their input'})")
        run.add_argument("--caching", choices=("on", "off"), help=f"caching: on emits the last revision per key and commit (default: {'on' if defaults.caching else 'off'})")
        run.add_argument(
            "--accept-topology-change", action="store_true",
            help="start even if the topology no longer finds committed state (renamed stores start empty): topology_upgrade = accept_loss",
        )  # fmt: skip
        run.add_argument("--log-file", default=None, help="where details go (default: <state_dir>/<application_id>/logs/)")
        run.add_argument("--metrics-file", help="append one JSON line per committed micro-batch to this file (for tools)")
        run.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while it runs (metrics_port; docs/metrics.md)")

    def _run(self, options: argparse.Namespace) -> int:
        flags = {
            "application_id": options.application_id,
            "root": options.root,
            "processing_guarantee": options.guarantee,
            "commit_interval_ms": options.commit_interval_ms,
            "max_records_per_batch": options.max_records_per_batch,
            "num_partitions": options.partitions,
            "caching": None if options.caching is None else options.caching == "on",
            "topology_upgrade": "accept_loss" if options.accept_topology_change else None,
            "metrics_port": options.metrics_port,
            **self._settings_of_options(options),
        }
        config = load_config(self.settings, options, flags)
        log_file = Path(options.log_file) if options.log_file else default_log_file(config)
        # Before the topology is built: building it may cost the driver ~0.5 s (a pyarrow
        # expression imports pandas), which the hosts' imports then overlap.
        prepare_task_hosts(config, log_file=str(log_file))
        app = self.app_class(self.build_topology(options), config)
        if options.metrics_file:
            app.progress.write_metrics_to(options.metrics_file)
        return run_from_terminal(app, until_caught_up=options.until_caught_up, timeout_s=options.timeout_s, log_file=log_file)

    def _describe(self, options: argparse.Namespace) -> int:
        print(self.build_topology(options).describe(), end="")
        return 0

    def _operation(self, options: argparse.Namespace) -> int:
        return run_operation(options, lambda: self.build_topology(options), self.settings, self._settings_of_options(options))

    def _add_results(self) -> None:
        results = self._add("results", "print an output topic's committed records as CSV", self._results)
        add_common_options(results, self.application_id, root=self._own_root)
        results.add_argument("--topic", help="the output topic (default: the application's only one; the error lists them)")
        results.add_argument("--latest", action="store_true", help="the latest record per key (and window), deletes dropped: the output as a table")
        for flags, kwargs in self._topology_options:
            results.add_argument(*flags, **kwargs)

    def _results(self, options: argparse.Namespace) -> int:
        from deltastreams.sinks import Topic

        config = self.config(options, existing_root=True)
        topology = self.build_topology(options)
        outputs = sorted({t for sub in topology.subtopologies for t in sub.sink_topics} - set(topology.internal_topics))
        topic = options.topic
        if topic is None:
            if len(outputs) != 1:
                raise ConfigError(f"application '{config.application_id}' writes {len(outputs)} output topics: name one with --topic ({outputs})", setting="topic")
            topic = outputs[0]
        if not Topic.exists(config.root, topic):
            print(f"topic '{topic}' has no committed records yet under {config.root}", file=sys.stderr)
            return 0
        opened = Topic.open(config.root, topic)
        records = opened.read()
        rows = opened.layout.to_table_columns(records, topic)
        rows = rows.add_column(0, "partition", records.column("partition"))
        if options.latest:
            rows = _latest(rows, records, windowed=opened.layout.windowed)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(rows.column_names)
        for row in zip(*(rows.column(c).to_pylist() for c in rows.column_names), strict=True):
            writer.writerow(row)
        return 0


def _latest(rows, records, *, windowed: bool):
    """Each key's (and window's) last record, in offset order within its partition (a key has one
    partition), without those whose value is null (a table's deletes); sorted by window, then key."""
    keys = records.column("key").to_pylist()
    starts = records.column("window_start").to_pylist() if windowed else [None] * len(keys)
    values = records.column("value").to_pylist()
    last: dict[Any, int] = {}
    for i, identity in enumerate(zip(map(repr, keys), starts, strict=True)):
        last[identity] = i
    kept = sorted((i for i in last.values() if values[i] is not None), key=lambda i: (starts[i] or 0, repr(keys[i])))
    return rows.take(kept)
