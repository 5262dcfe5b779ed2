"""The paper's running example: pageviews per category in 5-second windows.

``pageview-events`` (keyed by user_id) -> filter(duration_s >= 30) -> map to key = category ->
group_by_key -> windowed_by(5 s tumbling, grace) -> count -> to_stream -> ``pageview-windowed-counts``
(columns category, window_start, window_end, count, plus partition, offset, timestamp).

    python -m deltastreams.jobs.pageview generate --root /tmp/pv --events 100000
    python -m deltastreams.jobs.pageview generate --root /tmp/pv --rate 5000 --duration-s 60    # a steady stream
    python -m deltastreams.jobs.pageview run --root /tmp/pv --until-caught-up
    python -m deltastreams.jobs.pageview results --root /tmp/pv
    python -m deltastreams.jobs.pageview describe
    python -m deltastreams.jobs.pageview status --root /tmp/pv [--json]              # read-only, also while it runs
    python -m deltastreams.jobs.pageview reset --root /tmp/pv --to-earliest          # stopped: reprocess (docs/operations.md)
    python -m deltastreams.jobs.pageview query --root /tmp/pv [--key K] [--from T --to T]   # the store's committed state, CSV (docs/queries.md)

On a cluster: spark-submit --master spark://host:7077 jobs/pageview.py run --root s3://bucket/pv
(with the project installed on the executors, or its packages shipped with --py-files).

``run`` without ``--until-caught-up`` runs until stopped: SIGTERM or SIGINT (Ctrl-C) to the driver
process stops it between micro-batches (send it to the driver's pid, not its process group: a JVM
that gets SIGTERM shuts Spark down under the running batch).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.conf import StreamsConfig
from deltastreams.streams.console import calling_on_stop_signals
from deltastreams.jobs.pageview_data import VALUE_TYPE, generate_events
from deltastreams.jobs.roots import require_root
from deltastreams.jobs.operations_cli import OPERATIONS_COMMANDS
from deltastreams.jobs.steady import SteadyGenerator, SteadyProgress, StatusFile
from deltastreams.streams import StreamsBuilder, Suppressed, TimeWindows, Topology
from deltastreams.streams.errors import DeltaStreamsError

INPUT_TOPIC = "pageview-events"
OUTPUT_TOPIC = "pageview-windowed-counts"
APPLICATION_ID = "pageview"


def build_topology(
    *,
    window_ms: int = 5000,
    grace_ms: int = 10_000,
    min_duration_s: int = 30,
    emit: str = "revisions",
    functions: str = "arrow",
    hops: int = 2,
    exclude_categories: Sequence[str] = (),
    store_name: str | None = None,
) -> Topology:
    """The pageview topology. ``functions`` picks how filter and map are written: ``arrow``
    (pyarrow expressions, vectorised, the default), ``python`` (callables, per record) or
    ``column`` (Spark Columns, compiled to Catalyst). ``hops=3`` first re-keys by page and
    repartitions, then re-keys by category (three sub-topologies): what one more hop costs.
    ``exclude_categories``: one more (unnamed) filter before the grouping, dropping those
    categories; ``store_name`` names the count's store (and so its repartition topic), which
    then keeps its name whatever operators are added before it (docs/operations.md)."""
    if functions == "python":
        long_enough = lambda user_id, view: view["duration_s"] >= min_duration_s  # noqa: E731
        by_category = lambda user_id, view: (view["category"], view)  # noqa: E731
    elif functions == "arrow":
        long_enough = pc.field("value", "duration_s") >= min_duration_s
        by_category = (pc.field("value", "category"), pc.field("value"))
    elif functions == "column":
        from pyspark.sql import functions as F

        long_enough = F.col("value.duration_s") >= min_duration_s
        by_category = (F.col("value.category"), F.col("value"))
    else:
        raise ValueError(f"functions is python, arrow or column, got {functions!r}")
    if hops not in (2, 3):
        raise ValueError(f"hops is 2 or 3, got {hops!r}")
    builder = StreamsBuilder()
    views = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=VALUE_TYPE).filter(long_enough)
    if hops == 3:
        by_page = (pc.field("value", "page_id"), pc.field("value")) if functions == "arrow" else (lambda user_id, view: (view["page_id"], view))
        if functions == "column":
            raise ValueError("hops=3 re-keys after a repartition, where Spark Column functions do not run; use arrow or python")
        views = views.map(by_page).repartition(name="pageviews-by-page")
    by_category_views = views.map(by_category)
    if exclude_categories:
        excluded = list(exclude_categories)
        kept = ~pc.field("key").isin(excluded) if functions == "arrow" else (lambda category, view: category not in excluded)
        by_category_views = by_category_views.filter(kept)
    counts = (
        by_category_views.group_by_key()
        .windowed_by(TimeWindows.of_size(window_ms).grace(grace_ms))
        .count(name=store_name)
    )
    if emit == "final":
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to(OUTPUT_TOPIC, key_column="category", value_column="count")
    return builder.build()


def generate(
    root: str,
    events: int,
    *,
    seed: int = 0,
    partitions: int = 2,
    late_fraction: float = 0.05,
    max_lateness_ms: int = 30_000,
    batches: int = 1,
    events_per_second: int = 10_000,
    users: int = 100_000,
) -> int:
    """Append ``events`` synthetic pageviews (of ``users`` users) to ``pageview-events`` in ``batches`` appends."""
    topic = input_topic(root, partitions)
    first = sum(topic.end_offsets().values())
    # The same events whatever the number of appends: generate once, then cut.
    records = generate_events(
        events, seed=seed, late_fraction=late_fraction, max_lateness_ms=max_lateness_ms, first_index=first, events_per_second=events_per_second, users=users
    )
    per_batch = -(-events // max(batches, 1))
    for start in range(0, events, per_batch):
        topic.append(records.slice(start, per_batch))
    return events


def kafka_input_topic(bootstrap_servers: str):
    """How ``pageview-events`` looks in Kafka: string keys (user_id), JSON values."""
    from deltastreams.sinks.kafka import KafkaTopic

    return KafkaTopic(bootstrap_servers, INPUT_TOPIC, key_format="string", value_format="json", key_type=pa.string(), value_type=VALUE_TYPE)


def generate_to_kafka(
    bootstrap_servers: str,
    events: int,
    *,
    seed: int = 0,
    partitions: int = 2,
    late_fraction: float = 0.05,
    max_lateness_ms: int = 30_000,
    events_per_second: int = 10_000,
    users: int = 100_000,
) -> int:
    """Produce to the Kafka topic ``pageview-events`` (created with ``partitions`` if missing) the
    events :func:`generate` appends to the Delta topic for the same arguments: same keys, values
    (as JSON), timestamps and partitions."""
    from deltastreams.sinks.kafka import create_kafka_topic, end_offsets, produce

    topic = kafka_input_topic(bootstrap_servers)
    partitions = create_kafka_topic(topic, partitions)
    first = sum(end_offsets(topic, range(partitions)).values())
    records = generate_events(
        events, seed=seed, late_fraction=late_fraction, max_lateness_ms=max_lateness_ms, first_index=first, events_per_second=events_per_second, users=users
    )
    return produce(topic, records, partitions)


def generate_steady(
    root: str,
    rate: int,
    *,
    duration_s: float | None = None,
    seed: int = 0,
    partitions: int = 2,
    late_fraction: float = 0.05,
    max_lateness_ms: int = 30_000,
    status_file: str | None = None,
    log_retention: timedelta | None = None,
) -> SteadyProgress:
    """Append ``rate`` pageviews a second, stamped with the time of their append, for
    ``duration_s`` or until SIGTERM/SIGINT (see :mod:`deltastreams.jobs.steady`); ``status_file`` is rewritten
    with the progress about once a second. ``log_retention``: the topic's, if this creates it."""
    generator = SteadyGenerator(
        input_topic(root, partitions, log_retention=log_retention), rate, duration_s=duration_s, late_fraction=late_fraction, max_lateness_ms=max_lateness_ms, seed=seed
    )
    status = StatusFile(status_file) if status_file else None
    with calling_on_stop_signals(lambda name: generator.stop()):
        progress = generator.run(on_append=status)
    if status is not None:
        status.write(progress, finished=True)
    return progress


def input_topic(root: str, partitions: int = 2, *, log_retention: timedelta | None = None):
    """The ``pageview-events`` topic under ``root``, created (keyed by user_id) if missing, with
    ``log_retention`` as its ``delta.logRetentionDuration`` (None: the default of the topics
    deltastreams creates)."""
    from deltastreams.sinks import Topic, create_topic

    if Topic.exists(root, INPUT_TOPIC):
        return Topic.open(root, INPUT_TOPIC)
    retention = {} if log_retention is None else {"log_retention": log_retention}
    return create_topic(root, INPUT_TOPIC, partitions=partitions, key_type=pa.string(), value_type=VALUE_TYPE, key_column="user_id", **retention)


RAW_SCHEMA = pa.schema(
    [("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()), ("category", pa.string()),
     ("window_start", pa.int64()), ("window_end", pa.int64()), ("count", pa.int64())]
)
RESULT_COLUMNS = ["category", "window_start", "window_end", "count"]


def read_results(root: str, *, raw: bool = False) -> pa.Table:
    """The output topic: every committed record (``raw``), or the latest revision per window."""
    from deltastreams.sinks import Topic

    if Topic.exists(root, OUTPUT_TOPIC):
        table = Topic.open(root, OUTPUT_TOPIC).read()
        columns = [table["partition"], table["offset"], table["timestamp"], table["key"], table["window_start"], table["window_end"], table["value"]]
        records = pa.table(columns, schema=RAW_SCHEMA)
    else:  # created with the first output record (with emit-final: the first closed window)
        records = RAW_SCHEMA.empty_table()
    if raw:
        return records
    # Revisions of one window share a key, hence a partition: the last by offset is the latest.
    records = records.append_column("_row", pa.array(range(records.num_rows), pa.int64()))
    last = records.group_by(["category", "window_start"]).aggregate([("_row", "max")])
    latest = records.take(last["_row_max"]).select(RESULT_COLUMNS)
    return latest.sort_by([("window_start", "ascending"), ("category", "ascending")])


def config_from(args: argparse.Namespace) -> StreamsConfig:
    settings = {
        "application_id": args.application_id,
        "root": args.root,
        "processing_guarantee": args.guarantee,
        "commit_interval_ms": args.commit_interval_ms,
        "num_partitions": args.partitions,
        "caching": args.caching == "on",
        "max_records_per_batch": args.max_records_per_batch,
    }
    if getattr(args, "accept_topology_change", False):
        settings["topology_upgrade"] = "accept_loss"
    if getattr(args, "kafka", None):
        settings.update({"kafka.bootstrap_servers": args.kafka, "kafka.source_topics": [INPUT_TOPIC], "kafka.value_format": "json"})
    if getattr(args, "output_kafka", None):
        if args.kafka and args.kafka != args.output_kafka:
            raise SystemExit("error: --kafka and --output-kafka name different clusters; one application talks to one Kafka cluster")
        settings.update({"kafka.bootstrap_servers": args.output_kafka, "kafka.sink_topics": [OUTPUT_TOPIC], "kafka.value_format": "json"})
    if getattr(args, "metrics_port", None) is not None:
        settings["metrics_port"] = args.metrics_port
    for item in args.set or ():
        key, _, value = item.partition("=")
        settings[key] = value
    return StreamsConfig.load(settings, file=args.config)


def _topology_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--window-ms", type=int, default=5000)
    parser.add_argument("--grace-ms", type=int, default=10_000)
    parser.add_argument("--min-duration-s", type=int, default=30)
    parser.add_argument("--emit", choices=("revisions", "final"), default="revisions")
    parser.add_argument("--functions", choices=("arrow", "python", "column"), default="arrow")
    parser.add_argument("--hops", type=int, choices=(2, 3), default=2, help="sub-topologies (3: one more repartition)")
    parser.add_argument(
        "--exclude-category", action="append", default=[], metavar="CATEGORY",
        help="drop this category before counting (one more unnamed filter upstream of the count)",
    )  # fmt: skip
    parser.add_argument("--store-name", default=None, help="name the count's store (and its repartition topic) instead of generating it")


def _storage_args(parser: argparse.ArgumentParser) -> None:
    """generate and results reach an object-store root as run does: the same file, --set and AWS variables."""
    parser.add_argument("--config", default=None, help="a TOML file of settings (its [storage_options] are used)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="storage_options.<KEY>=<value> for an object-store root")


def _use_storage_settings(args: argparse.Namespace) -> None:
    from deltastreams.sinks import require_reachable, use_storage_options

    settings = {"application_id": APPLICATION_ID, "root": args.root}
    for item in args.set or ():
        key, _, value = item.partition("=")
        settings[key] = value
    use_storage_options(StreamsConfig.load(settings, file=args.config).storage_options)
    require_reachable(args.root)
    if args.command == "results":
        require_root(args.root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.jobs.pageview", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    describe = commands.add_parser("describe", help="print the topology description")
    _topology_args(describe)

    gen = commands.add_parser("generate", help="append synthetic pageview events")
    where = gen.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", help="append to the Delta topic under this root")
    where.add_argument("--kafka", metavar="HOST:PORT", help="produce to the Kafka topic pageview-events there instead (same events, as JSON)")
    gen.add_argument("--events", type=int, help="append this many events at once (event time starts at a fixed date)")
    gen.add_argument("--rate", type=int, help="instead: a steady stream of this many events per second, stamped with the time of their append")
    gen.add_argument("--duration-s", type=float, help="with --rate: for this long (default: until SIGTERM or SIGINT)")
    gen.add_argument("--status-file", help="with --rate: a JSON file rewritten about once a second with what was appended")
    gen.add_argument(
        "--log-retention-ms", type=int,
        help="with --rate, on a new topic: its delta.logRetentionDuration (commit files older than this are deleted as it goes; default: one day)",
    )  # fmt: skip
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--users", type=int, default=100_000, help="with --events: distinct users (keys of the input)")
    gen.add_argument("--source-partitions", type=int, default=2)
    gen.add_argument("--late-fraction", type=float, default=0.05)
    gen.add_argument("--max-lateness-ms", type=int, default=30_000)
    gen.add_argument("--batches", type=int, default=1, help="with --events: in this many appends")
    gen.add_argument("--events-per-second", type=int, default=10_000, help="with --events: event-time rate, how fast timestamps advance")
    _storage_args(gen)

    run = commands.add_parser("run", help="run the job on Spark")
    run.add_argument("--root", required=True)
    run.add_argument("--application-id", default=APPLICATION_ID)
    run.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    run.add_argument("--commit-interval-ms", type=int, default=1000)
    run.add_argument("--partitions", type=int, default=3, help="partitions of the repartition topic")
    run.add_argument("--caching", choices=("on", "off"), default="on")
    run.add_argument("--max-records-per-batch", type=int, default=1_000_000)
    run.add_argument("--until-caught-up", action="store_true", help="stop once all input present at start is processed")
    run.add_argument("--timeout-s", type=float, default=None)
    run.add_argument("--config", default=None, help="a TOML file of settings")
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="any setting of conf/defaults.toml")
    run.add_argument("--log-file", default=None, help="where details go (default: <state_dir>/<application_id>/logs/)")
    run.add_argument("--metrics-file", help="append one JSON line per committed micro-batch to this file (for tools: deltastreams.devtools.harness.soak)")
    run.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while the job runs (docs/metrics.md; metrics_port)")
    run.add_argument("--kafka", metavar="HOST:PORT", help="read pageview-events from this Kafka cluster (everything else stays under --root)")
    run.add_argument(
        "--accept-topology-change", action="store_true",
        help="start even if the topology no longer finds committed state (renamed stores start empty): topology_upgrade = accept_loss",
    )  # fmt: skip
    run.add_argument("--output-kafka", metavar="HOST:PORT", help=f"also publish the counts to the Kafka topic {OUTPUT_TOPIC} there, exactly once (read it read_committed)")
    _topology_args(run)

    results = commands.add_parser("results", help="print the windowed counts as CSV")
    results.add_argument("--root", required=True)
    results.add_argument("--raw", action="store_true", help="every committed output record, with partition and offset")
    _storage_args(results)

    _add_operations_commands(commands)

    args = parser.parse_args(argv)
    if args.command == "generate" and args.kafka and args.rate is not None:
        parser.error("generate --kafka takes --events N (--rate streams into a Delta topic only)")
    if args.command == "generate" and (args.events is None) == (args.rate is None):
        parser.error("generate takes --events N (a batch of events) or --rate EVENTS_PER_S (a steady stream), one of them")
    if args.command == "generate" and args.rate is None and (args.duration_s is not None or args.status_file is not None or args.log_retention_ms is not None):
        parser.error("--duration-s, --status-file and --log-retention-ms go with --rate")
    if args.command == "generate" and args.log_retention_ms is not None and args.log_retention_ms <= 0:
        parser.error("--log-retention-ms must be positive")
    try:
        return _command(args)
    except DeltaStreamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _add_operations_commands(commands) -> None:
    """``status`` and ``reset`` (:mod:`deltastreams.jobs.operations_cli`), for this job's topology."""
    from deltastreams.jobs.operations_cli import add_query_command, add_reset_command, add_status_command

    for parser in (add_status_command(commands, APPLICATION_ID), add_reset_command(commands, APPLICATION_ID), add_query_command(commands, APPLICATION_ID)):
        parser.add_argument("--kafka", metavar="HOST:PORT", help="the application reads pageview-events from this Kafka cluster")
        _topology_args(parser)


def _operations_command(args: argparse.Namespace) -> int:
    from deltastreams.jobs.operations_cli import run_query, run_reset, run_status

    def topology() -> Topology:
        return build_topology(window_ms=args.window_ms, grace_ms=args.grace_ms, min_duration_s=args.min_duration_s, emit=args.emit, hops=args.hops)

    kafka = {"kafka.bootstrap_servers": args.kafka, "kafka.source_topics": [INPUT_TOPIC], "kafka.value_format": "json"} if args.kafka else None
    return {"status": run_status, "reset": run_reset, "query": run_query}[args.command](args, topology, kafka)


def _command(args: argparse.Namespace) -> int:
    if args.command in OPERATIONS_COMMANDS:
        return _operations_command(args)
    if args.command in ("generate", "results") and args.root:
        _use_storage_settings(args)
    if args.command == "describe":
        topology = build_topology(
            window_ms=args.window_ms, grace_ms=args.grace_ms, emit=args.emit, hops=args.hops, exclude_categories=args.exclude_category, store_name=args.store_name
        )
        print(topology.describe(), end="")
    elif args.command == "generate" and args.rate is not None:
        progress = generate_steady(
            args.root,
            args.rate,
            duration_s=args.duration_s,
            seed=args.seed,
            partitions=args.source_partitions,
            late_fraction=args.late_fraction,
            max_lateness_ms=args.max_lateness_ms,
            status_file=args.status_file,
            log_retention=None if args.log_retention_ms is None else timedelta(milliseconds=args.log_retention_ms),
        )
        print(f"{progress.line()}; topic {INPUT_TOPIC} under {args.root}", file=sys.stderr)
    elif args.command == "generate" and args.kafka:
        n = generate_to_kafka(
            args.kafka,
            args.events,
            seed=args.seed,
            partitions=args.source_partitions,
            late_fraction=args.late_fraction,
            max_lateness_ms=args.max_lateness_ms,
            events_per_second=args.events_per_second,
            users=args.users,
        )
        print(f"produced {n:,} events to Kafka topic {INPUT_TOPIC} at {args.kafka}", file=sys.stderr)
    elif args.command == "generate":
        n = generate(
            args.root,
            args.events,
            seed=args.seed,
            partitions=args.source_partitions,
            late_fraction=args.late_fraction,
            max_lateness_ms=args.max_lateness_ms,
            batches=args.batches,
            events_per_second=args.events_per_second,
            users=args.users,
        )
        print(f"appended {n:,} events to {INPUT_TOPIC} under {args.root}", file=sys.stderr)
    elif args.command == "run":
        from deltastreams.streams.app import StreamsApp
        from deltastreams.streams.console import run_from_terminal

        topology = build_topology(
            window_ms=args.window_ms, grace_ms=args.grace_ms, min_duration_s=args.min_duration_s, emit=args.emit, functions=args.functions, hops=args.hops,
            exclude_categories=args.exclude_category, store_name=args.store_name,
        )  # fmt: skip
        app = StreamsApp(topology, config_from(args))
        if args.metrics_file:
            app.progress.write_metrics_to(args.metrics_file)
        return run_from_terminal(app, until_caught_up=args.until_caught_up, timeout_s=args.timeout_s, log_file=args.log_file and Path(args.log_file))
    else:
        table = read_results(args.root, raw=args.raw)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(table.column_names)
        for row in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
            writer.writerow(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
