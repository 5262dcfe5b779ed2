"""python -m jobs.differential: random scenarios through Kafka Streams' TopologyTestDriver and
deltastreams' own, record by record and describe() by describe().

    python -m jobs.differential --scenarios 10000 --seed 1
    python -m jobs.differential --shapes aggregate --scenarios 500 --seed 7
    python -m jobs.differential --replay differential-failures/aggregate-7-12.json

Prints a table per shape (scenarios, the same, documented differences, differences). Each
difference is shrunk to a minimal scenario and written to ``--failures`` as a file ``--replay``
runs again. Exits 1 if any scenario differs in a way docs/differences-from-kafka.md does not
explain.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from jobs.differential.oracle import KAFKA_STREAMS_VERSION, KafkaStreamsOracle
from jobs.differential.runner import judge, read_scenario, write_failure
from jobs.differential.scenarios import draw_scenario
from jobs.differential.shapes import SHAPES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.differential", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shapes", help=f"comma-separated, of: {', '.join(sorted(SHAPES))} (default: all)")
    parser.add_argument("--failures", type=Path, default=Path("differential-failures"), help="where minimal failing scenarios go")
    parser.add_argument("--replay", type=Path, help="run one scenario file and print what differs")
    parser.add_argument("--stop-after", type=int, default=20, help="stop after this many differences")
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
    failures = []
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
