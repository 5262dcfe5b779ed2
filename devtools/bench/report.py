"""The benchmark's outputs: results.json, PNG plots in the paper's style, a Markdown summary."""

from __future__ import annotations

import json
from pathlib import Path


def _plot(results: dict, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    intervals = results["intervals_ms"]
    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, key in (("exactly_once", "exactly_once@{}"), ("at_least_once", "at_least_once@{}"), ("plain Spark SS", "spark_structured_streaming@{}")):
        ys = [results["events_per_s"].get(key.format(i)) for i in intervals]
        if any(y is not None for y in ys):
            ax.plot(intervals, [y / 1e3 if y else None for y in ys], marker="o", label=label)
    if results["events_per_s"].get("pyarrow"):
        ax.axhline(results["events_per_s"]["pyarrow"] / 1e3, linestyle="--", color="grey", label="pyarrow, 1 process")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("commit interval (ms)")
    ax.set_ylabel("throughput (k events/s, log scale)")
    ax.set_title(f"pageview windowed count, {results['events']:,} events, {results['cores']} cores")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    written.append("throughput.png")
    plt.close(fig)

    latency = results.get("latency_ms", {})
    if latency:
        fig, ax = plt.subplots(figsize=(6, 4))
        for guarantee in ("exactly_once", "at_least_once"):
            points = sorted((int(k.split("@")[1]), v) for k, v in latency.items() if k.startswith(guarantee) and v.get("p50") is not None)
            if points:
                xs = [p[0] for p in points]
                ax.plot(xs, [p[1]["p50"] for p in points], marker="o", label=f"{guarantee} p50")
                ax.plot(xs, [p[1]["p99"] for p in points], marker="^", linestyle=":", label=f"{guarantee} p99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("commit interval (ms)")
        ax.set_ylabel("end-to-end latency (ms)")
        ax.set_title("steady stream latency")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "latency.png", dpi=110)
        written.append("latency.png")
        plt.close(fig)
    return written


def _summary(results: dict, plots: list[str]) -> str:
    eps = results["events_per_s"]
    lines = [
        f"# Benchmark {results['started']}",
        "",
        f"`{results['command']}` — {results['events']:,} events, {results['cores']} cores; versions {results['versions']}.",
        f"Events/s of the best of {results.get('repeats', 1)} runs per configuration, run in rotating order (every run: `runs_seconds` in results.json).",
        "",
        "| commit interval | exactly_once | at_least_once | EOS / ALOS | plain Spark SS | EOS / plain |",
        "|---|---|---|---|---|---|",
    ]
    for interval in results["intervals_ms"]:
        e, a, p = eps.get(f"exactly_once@{interval}"), eps.get(f"at_least_once@{interval}"), eps.get(f"spark_structured_streaming@{interval}")
        ratio = lambda x, y: f"{x / y:.2f}" if x and y else "-"  # noqa: E731
        fmt = lambda x: f"{x:,.0f}" if x else "-"  # noqa: E731
        lines.append(f"| {interval} ms | {fmt(e)} | {fmt(a)} | {ratio(e, a)} | {fmt(p)} | {ratio(e, p)} |")
    hops = eps.get("exactly_once_3_subtopologies@1000")
    if hops and eps.get("exactly_once@1000"):
        lines += ["", f"Three sub-topologies (one more repartition), exactly_once @1 s: {hops:,.0f} events/s, {hops / eps['exactly_once@1000']:.2f}x the two-sub-topology pageview."]
    steady = results.get("events_per_s_steady", {})
    if steady:
        lines += ["", "Steady part of each run (first batch started to last batch done, without query start-up): " + ", ".join(f"{k} {v:,.0f}/s" for k, v in steady.items()) + "."]
    lines += ["", f"pyarrow group-by, one process: {eps.get('pyarrow', 0):,.0f} events/s (no order, no state, no commits).", ""]
    if results.get("latency_ms"):
        lines += [
            "| latency (steady stream) | p50 ms | p95 ms | p99 ms | output records | median gap between output commits | drift (last tenth / first) |",
            "|---|---|---|---|---|---|---|",
        ]
        for key, v in sorted(results["latency_ms"].items()):
            if v.get("p50") is not None:
                c = v.get("cadence") or {}
                gap = f"{c['gap_p50_ms']:.0f} ms" if c.get("gap_p50_ms") is not None else "-"
                drift = f"{c['drift']:.2f}x" if c.get("drift") is not None else "-"
                lines.append(f"| {key} | {v['p50']:.0f} | {v['p95']:.0f} | {v['p99']:.0f} | {v['records']} | {gap} | {drift} |")
        lines.append("")
    if results.get("scaling"):
        lines += ["| scaling (exactly_once, 1 s) | seconds | µs per event |", "|---|---|---|"]
        for n, seconds in sorted((int(k), v) for k, v in results["scaling"].items()):
            lines.append(f"| {n:,} events | {seconds:.1f} | {seconds / n * 1e6:.2f} |")
        lines.append("")
    if results.get("restore"):
        r = results["restore"]
        lines += [f"Restore of a {r['keys']:,}-key store: from its changelog {r['from_changelog_s']:.2f} s, from its local files {r['from_local_s']:.3f} s.", ""]
    if results.get("peak_memory_mb"):
        lines += [f"Peak memory of a deltastreams run (driver, JVM, Python workers): {results['peak_memory_mb']:,.0f} MB.", ""]
    lines += [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def write_report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    plots = _plot(results, out)
    (out / "summary.md").write_text(_summary(results, plots))
