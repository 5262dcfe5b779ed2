"""Orders enriched with their customer by a foreign-key table join: ``orders`` (keyed by order
id, value ``"<order>|<customer id>"``) joined with ``customers`` (keyed by customer id, value the
customer's name) on the customer id the order's value names, into ``orders-with-customers``
(``"<order>@<name>"``; a delete where the order or its customer is gone).

    python -m deltastreams.jobs.fkjoin generate --root /tmp/fk --rounds 5
    python -m deltastreams.jobs.fkjoin run --root /tmp/fk --until-caught-up --max-records-per-batch 1
    python -m deltastreams.jobs.fkjoin results --root /tmp/fk [--reference]

``generate`` appends rounds: customers updated (and a few deleted), then orders created, changed
(to another customer too) and deleted, each in slices of one Delta version. Every value is new
(it carries its round and position), so a join result ``order@name`` comes out once in a
correct run whatever the batches: a repeat is a batch published twice.
:func:`reference` computes the joined table independently with pandas, from the final state of
both input topics.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
import pyarrow as pa

from deltastreams.jobs.example_output import rounds_done as example_rounds_done
from deltastreams.streams import StreamsApp, StreamsBuilder, Topology

ORDERS, CUSTOMERS, OUTPUT_TOPIC = "orders", "customers", "orders-with-customers"
APPLICATION_ID = "fkjoin"
N_ORDERS, N_CUSTOMERS, SLICES = 300, 40, 3
START_MS, ROUND_MS = 1_700_000_000_000, 10_000


def build_topology() -> Topology:
    builder = StreamsBuilder()
    orders = builder.table(ORDERS, key_type=pa.string(), value_type=pa.string())
    customers = builder.table(CUSTOMERS, key_type=pa.string(), value_type=pa.string())
    enriched = orders.join(customers, lambda order: order.split("|")[1], lambda order, name: f"{order}@{name}", name="order-customer")
    enriched.to_stream().to(OUTPUT_TOPIC)
    return builder.build()


def _topics(root: str):
    from deltastreams.sinks import Topic, create_topic

    # The output topic too: a first batch of only deletes (an inner join's tombstones) would
    # otherwise create it with a null value type.
    return [
        Topic.open(root, t) if Topic.exists(root, t) else create_topic(root, t, partitions=2, key_type=pa.string(), value_type=pa.string())
        for t in (ORDERS, CUSTOMERS, OUTPUT_TOPIC)
    ][:2]


def rounds_done(root: str) -> int:
    return example_rounds_done(root, ORDERS, START_MS, ROUND_MS)


def generate(root: str, *, rounds: int, seed: int = 0) -> None:
    orders, customers = _topics(root)
    first = rounds_done(root)
    for r in range(first, first + rounds):
        rng = np.random.default_rng([seed, r])
        ts = START_MS + r * ROUND_MS
        updated = rng.choice(N_CUSTOMERS, N_CUSTOMERS // 2, replace=False)
        names = [None if rng.random() < 0.1 else f"name{r}.{i}" for i in range(len(updated))]
        changed = rng.choice(N_ORDERS, N_ORDERS // 2, replace=False)
        values = [None if rng.random() < 0.1 else f"order{r}.{i}|c{rng.integers(N_CUSTOMERS + 3)}" for i in range(len(changed))]
        for s in range(SLICES):  # interleaved slices: customers and orders change while responses travel
            for topic, keys, vals, prefix in ((customers, updated, names, "c"), (orders, changed, values, "o")):
                part = slice(s * len(keys) // SLICES, (s + 1) * len(keys) // SLICES)
                rows = [(f"{prefix}{k}", v) for k, v in zip(keys[part], vals[part], strict=True)]
                topic.append(pa.table({
                    "key": pa.array([k for k, _ in rows], pa.string()),
                    "value": pa.array([v for _, v in rows], pa.string()),
                    "timestamp": pa.array(range(ts, ts + len(rows)), pa.int64()),
                }))
                ts += len(rows)


def _final(root: str, topic: str) -> pd.DataFrame:
    """A table topic's final rows: each key's last record in its partition, deletes dropped."""
    from deltastreams.sinks import Topic

    records = Topic.open(root, topic).read().select(["partition", "offset", "key", "value"]).to_pandas()
    last = records.sort_values(["partition", "offset"]).groupby("key", sort=False).tail(1)
    return last[last["value"].notna()].set_index("key")["value"]


def reference(root: str) -> dict[str, str]:
    """The joined table, from the input topics' final states (pandas, independent of the job)."""
    orders = _final(root, ORDERS).to_frame("order")
    orders["customer"] = orders["order"].str.split("|").str[1]
    customers = _final(root, CUSTOMERS).to_frame("name")
    joined = orders.join(customers, on="customer", how="inner")
    return dict(zip(joined.index, joined["order"] + "@" + joined["name"], strict=True))


def read_results(root: str) -> tuple[dict[str, str], pd.DataFrame]:
    """The joined table as the output ends (each key's last record, deletes dropped), and every
    output record."""
    from deltastreams.sinks import Topic

    if not Topic.exists(root, OUTPUT_TOPIC):
        return {}, pd.DataFrame(columns=["partition", "offset", "key", "value"])
    records = Topic.open(root, OUTPUT_TOPIC).read().select(["partition", "offset", "key", "value"]).to_pandas()
    last = records.sort_values(["partition", "offset"]).groupby("key", sort=False).tail(1)
    last = last[last["value"].notna()]
    return dict(zip(last["key"], last["value"], strict=True)), records


def main(argv: list[str] | None = None) -> int:
    cli = StreamsApp.command_line(build_topology, {"application_id": APPLICATION_ID}, prog="python -m deltastreams.jobs.fkjoin", description=__doc__)

    def generate_command(options: argparse.Namespace) -> None:
        generate(cli.config(options).root, rounds=options.rounds, seed=options.seed)
        print(f"appended {options.rounds} rounds under {options.root}", file=sys.stderr)

    gen = cli.add_command("generate", "append rounds of customer and order updates", generate_command)
    gen.add_argument("--root", required=True)
    gen.add_argument("--rounds", type=int, default=5)
    gen.add_argument("--seed", type=int, default=0)

    def results_command(options: argparse.Namespace) -> None:
        root = cli.config(options, existing_root=True).root
        table = reference(root) if options.reference else read_results(root)[0]
        for key, value in sorted(table.items()):
            print(f"{key},{value}")

    results = cli.add_command("results", "print the joined table, sorted", results_command)
    results.add_argument("--root", required=True)
    results.add_argument("--reference", action="store_true", help="the independent computation instead of the job's output")
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
