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

The command line is every application's (:mod:`deltastreams.streams.command_line`), with this
job's own ``generate`` and ``results``, the options that shape its topology (``--window-ms``,
``--grace-ms``, ``--min-duration-s``, ``--emit``) and ``--kafka`` / ``--output-kafka``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc

from deltastreams.jobs.pageview_data import VALUE_TYPE, generate_events
from deltastreams.jobs.steady import SteadyGenerator, SteadyProgress, StatusFile
from deltastreams.streams import StreamsApp, StreamsBuilder, Suppressed, TimeWindows, Topology
from deltastreams.streams.console import calling_on_stop_signals

INPUT_TOPIC = "pageview-events"
OUTPUT_TOPIC = "pageview-windowed-counts"
APPLICATION_ID = "pageview"
SETTINGS = {"application_id": APPLICATION_ID, "num_partitions": 3}
"""The job's own settings: 3 partitions for the repartition topic, as in the paper."""


def build_topology(*, window_ms: int = 5000, grace_ms: int = 10_000, min_duration_s: int = 30, emit: str = "revisions") -> Topology:
    """The pageview topology. Filter and map are pyarrow expressions, run a batch at a time
    (Python callables ``lambda user_id, view: ...`` work too, a record at a time: docs/dsl.md).
    ``emit="final"``: one count per window, once it closes (``suppress``), instead of a revision
    per update."""
    builder = StreamsBuilder()
    views = builder.stream(INPUT_TOPIC, key_type=pa.string(), value_type=VALUE_TYPE)
    counts = (
        views.filter(pc.field("value", "duration_s") >= min_duration_s)
        .map((pc.field("value", "category"), pc.field("value")))  # re-key by category: a repartition
        .group_by_key()
        .windowed_by(TimeWindows.of_size(window_ms).grace(grace_ms))
        .count()
    )
    if emit == "final":
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to(OUTPUT_TOPIC, key_column="category", value_column="count")
    return builder.build()


# -- the input ----------------------------------------------------------------------------------


def input_topic(root: str, partitions: int = 2, *, log_retention: timedelta | None = None):
    """The ``pageview-events`` topic under ``root``, created (keyed by user_id) if missing, with
    ``log_retention`` as its ``delta.logRetentionDuration`` (None: the default of the topics
    deltastreams creates)."""
    from deltastreams.sinks import Topic, create_topic

    if Topic.exists(root, INPUT_TOPIC):
        return Topic.open(root, INPUT_TOPIC)
    retention = {} if log_retention is None else {"log_retention": log_retention}
    return create_topic(root, INPUT_TOPIC, partitions=partitions, key_type=pa.string(), value_type=VALUE_TYPE, key_column="user_id", **retention)


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


# -- the output ---------------------------------------------------------------------------------

RAW_SCHEMA = pa.schema(
    [("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()), ("category", pa.string()),
     ("window_start", pa.int64()), ("window_end", pa.int64()), ("count", pa.int64())]
)  # fmt: skip
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


# -- the command line ---------------------------------------------------------------------------


def topology_from(options: argparse.Namespace) -> Topology:
    return build_topology(window_ms=options.window_ms, grace_ms=options.grace_ms, min_duration_s=options.min_duration_s, emit=options.emit)


def _kafka_source(servers: str) -> dict:
    return {"kafka.bootstrap_servers": servers, "kafka.source_topics": [INPUT_TOPIC], "kafka.value_format": "json"}


def _kafka_sink(servers: str) -> dict:
    return {"kafka.bootstrap_servers": servers, "kafka.sink_topics": [OUTPUT_TOPIC], "kafka.value_format": "json"}


def main(argv: list[str] | None = None) -> int:
    cli = StreamsApp.command_line(topology_from, SETTINGS, prog="python -m deltastreams.jobs.pageview", description=__doc__)
    cli.add_option("--window-ms", type=int, default=5000, topology=True, help="window size (default: 5000)")
    cli.add_option("--grace-ms", type=int, default=10_000, topology=True, help="grace period of a window (default: 10000)")
    cli.add_option("--min-duration-s", type=int, default=30, topology=True, help="count views at least this long (default: 30)")
    cli.add_option("--emit", choices=("revisions", "final"), default="revisions", topology=True, help="a revision per update, or one final count per window")
    cli.add_option("--kafka", metavar="HOST:PORT", settings=_kafka_source, help="the application reads pageview-events from this Kafka cluster (everything else stays under --root)")
    cli.add_option(
        "--output-kafka", metavar="HOST:PORT", settings=_kafka_sink, commands=("run",),
        help=f"also publish the counts to the Kafka topic {OUTPUT_TOPIC} there, exactly once (read it read_committed)",
    )  # fmt: skip

    def generate_command(options: argparse.Namespace) -> int:
        if options.kafka and options.rate is not None:
            cli.parser.error("generate --kafka takes --events N (--rate streams into a Delta topic only)")
        if (options.events is None) == (options.rate is None):
            cli.parser.error("generate takes --events N (a batch of events) or --rate EVENTS_PER_S (a steady stream), one of them")
        if options.rate is None and (options.duration_s is not None or options.status_file is not None or options.log_retention_ms is not None):
            cli.parser.error("--duration-s, --status-file and --log-retention-ms go with --rate")
        if options.log_retention_ms is not None and options.log_retention_ms <= 0:
            cli.parser.error("--log-retention-ms must be positive")
        if options.kafka:
            n = generate_to_kafka(
                options.kafka, options.events, seed=options.seed, partitions=options.source_partitions, late_fraction=options.late_fraction,
                max_lateness_ms=options.max_lateness_ms, events_per_second=options.events_per_second, users=options.users,
            )  # fmt: skip
            print(f"produced {n:,} events to Kafka topic {INPUT_TOPIC} at {options.kafka}", file=sys.stderr)
            return 0
        cli.config(options)  # an object-store root is reached with the settings' storage options
        if options.rate is not None:
            progress = generate_steady(
                options.root, options.rate, duration_s=options.duration_s, seed=options.seed, partitions=options.source_partitions,
                late_fraction=options.late_fraction, max_lateness_ms=options.max_lateness_ms, status_file=options.status_file,
                log_retention=None if options.log_retention_ms is None else timedelta(milliseconds=options.log_retention_ms),
            )  # fmt: skip
            print(f"{progress.line()}; topic {INPUT_TOPIC} under {options.root}", file=sys.stderr)
            return 0
        n = generate(
            options.root, options.events, seed=options.seed, partitions=options.source_partitions, late_fraction=options.late_fraction,
            max_lateness_ms=options.max_lateness_ms, batches=options.batches, events_per_second=options.events_per_second, users=options.users,
        )  # fmt: skip
        print(f"appended {n:,} events to {INPUT_TOPIC} under {options.root}", file=sys.stderr)
        return 0

    gen = cli.add_command("generate", "append synthetic pageview events", generate_command)
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
    _add_settings_options(gen)

    def results_command(options: argparse.Namespace) -> int:
        cli.config(options, existing_root=True)
        table = read_results(options.root, raw=options.raw)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(table.column_names)
        for row in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
            writer.writerow(row)
        return 0

    results = cli.add_command("results", "print the windowed counts as CSV: the latest count per window", results_command)
    results.add_argument("--root", required=True)
    results.add_argument("--raw", action="store_true", help="every committed output record, with partition and offset")
    _add_settings_options(results)
    return cli.main(argv)


def _add_settings_options(parser: argparse.ArgumentParser) -> None:
    """generate and results reach an object-store root as run does: the same file, --set and AWS variables."""
    from deltastreams.streams.operations import add_settings_options

    add_settings_options(parser)


if __name__ == "__main__":
    sys.exit(main())
