"""python -m deltastreams.devtools.differential: random scenarios through Kafka Streams' TopologyTestDriver and
deltastreams' own, record by record and describe() by describe().

    python -m deltastreams.devtools.differential --scenarios 10000 --seed 1
    python -m deltastreams.devtools.differential --shapes aggregate --scenarios 500 --seed 7
    python -m deltastreams.devtools.differential --replay differential-failures/aggregate-7-12.json
    python -m deltastreams.devtools.differential --spark --scenarios 100 --seed 3

``--spark`` also runs each scenario whose verdict is not "different" on the Spark runtime, cut
into micro-batches with a restart in the middle (devtools/differential/spark_batches.py says what is
compared), which takes about a second per micro-batch.

Prints a table per shape (scenarios, the same, documented differences, differences). Each
difference is shrunk to a minimal scenario and written to ``--failures`` as a file ``--replay``
runs again. Exits 1 if any scenario differs in a way docs/differences-from-kafka.md does not
explain.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from deltastreams.devtools.differential.oracle import KAFKA_STREAMS_VERSION, KafkaStreamsOracle
from deltastreams.devtools.differential.runner import judge, read_scenario, write_failure
from deltastreams.devtools.differential.scenarios import draw_scenario
from deltastreams.devtools.differential.shapes import SHAPES
from deltastreams.devtools.differential.spark_batches import compare, contract, reference_outputs, run_batched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltastreams.devtools.differential", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shapes", help=f"comma-separated, of: {', '.join(sorted(SHAPES))} (default: all)")
    parser.add_argument("--failures", type=Path, default=Path("differential-failures"), help="where minimal failing scenarios go")
    parser.add_argument("--replay", type=Path, help="run one scenario file and print what differs")
    parser.add_argument("--stop-after", type=int, default=20, help="stop after this many differences")
    parser.add_argument("--spark", action="store_true", help="also run the scenarios on Spark in micro-batches, with a restart")
    args = parser.parse_args(argv)
    with KafkaStreamsOracle() as oracle:
        if args.replay:
            return _replay(args.replay, oracle)
        shapes = args.shapes.split(",") if args.shapes else None
        unknown = sorted(set(shapes or ()) - set(SHAPES))
        if unknown:
            parser.error(f"no shape named {', '.join(unknown)}; shapes: {', '.join(sorted(SHAPES))}")
        return _run(args, shapes, oracle)


def _run(args: argparse.Namespace, shapes: list[str] | None, oracle: KafkaStreamsOracle) -> int:
    outcomes: dict[str, Counter] = defaultdict(Counter)
    documented: Counter = Counter()
    batched: dict[str, Counter] = defaultdict(Counter)
    failures = []
    spark = None
    started = time.monotonic()
    for index in range(args.scenarios):
        scenario = draw_scenario(args.seed, index, shapes)
        verdict = judge(scenario, oracle)
        outcomes[scenario.shape][verdict.outcome] += 1
        if verdict.documented_as:
            documented[verdict.documented_as] += 1
        if verdict.outcome == "different":
            path = write_failure(args.failures, verdict, args.seed)
            failures.append(path)
            print(f"scenario {scenario.id} ({scenario.shape}) differs: {', '.join(d.kind for d in verdict.differences)}; minimal scenario in {path}", flush=True)
        elif args.spark and contract(scenario) is not None:
            run = run_batched(scenario, spark, random.Random(f"{args.seed}/{index}/spark"))
            spark = run.spark
            problem = compare(scenario, run.outputs, reference_outputs(scenario))
            batched[scenario.shape][contract(scenario) + (" ok" if problem is None else " different")] += 1
            if problem is not None:
                path = args.failures / f"spark-{scenario.shape}-{scenario.id}.json"
                args.failures.mkdir(parents=True, exist_ok=True)
                path.write_text(scenario.to_json() + "\n")
                failures.append(path)
                print(f"scenario {scenario.id} ({scenario.shape}) on Spark in {run.pieces} micro-batches (restart after {run.restarted_after}): {problem}; scenario in {path}", flush=True)
        if len(failures) >= args.stop_after:
            print(f"stopping after {len(failures)} differences", flush=True)
            break
    elapsed = time.monotonic() - started
    print(f"\nKafka Streams {KAFKA_STREAMS_VERSION} TopologyTestDriver vs deltastreams, seed {args.seed}, {sum(sum(c.values()) for c in outcomes.values())} scenarios in {elapsed:.0f} s\n")
    width = max([14, *map(len, outcomes)])
    print(f"| {'shape':<{width}} | scenarios | same | documented | different |")
    print(f"|{'-' * (width + 2)}|-----------|------|------------|-----------|")
    for shape in sorted(outcomes):
        c = outcomes[shape]
        print(f"| {shape:<{width}} | {sum(c.values()):>9} | {c['same']:>4} | {c['documented']:>10} | {c['different']:>9} |")
    for known, n in sorted(documented.items()):
        print(f"documented ({known}): {n}")
    if batched:
        print("\non Spark, in micro-batches with a restart (record: record for record; final: the same final result):")
        for shape in sorted(batched):
            print(f"  {shape}: " + ", ".join(f"{k} {n}" for k, n in sorted(batched[shape].items())))
    if spark is not None:
        spark.stop()
    return 1 if failures else 0


def _replay(path: Path, oracle: KafkaStreamsOracle) -> int:
    scenario = read_scenario(path)
    verdict = judge(scenario, oracle, minimize=False)
    print(f"{path}: {verdict.outcome}" + (f" ({verdict.documented_as})" if verdict.documented_as else ""))
    for difference in verdict.differences:
        print(f"\n{difference.kind}:\n{difference.detail}")
    return 1 if verdict.outcome == "different" else 0


if __name__ == "__main__":
    sys.exit(main())
