"""``peers.md`` and ``peers.png`` from ``peers.json`` (``python -m deltastreams.devtools.bench.peers``): throughput
per peer, events and commit interval (best run that passed its check), latency, correctness,
where each peer's time goes, and every run with the load average around it."""

from __future__ import annotations

from pathlib import Path

from deltastreams.devtools.bench.peers.runners import PEERS, label

SAME_SOURCE = {"deltastreams-kafka": None, "deltastreams-delta": None, "kafka-streams": "deltastreams-kafka",
               "spark-kafka": "deltastreams-kafka", "spark-delta": "deltastreams-delta"}


def best(runs: list[dict], peer: str, events: int, interval: int, key: str) -> dict | None:
    """The run with the most events/s by ``key`` among those that passed their check."""
    good = [r for r in runs if r["peer"] == peer and r["events"] == events and r["interval_ms"] == interval and r["check"]["ok"]]
    return max(good, key=lambda r: r[key]) if good else None


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _ratio(a: dict | None, b: dict | None, key: str) -> str:
    return "" if a is None or b is None else f"{a[key] / b[key]:.2f}x"


def write_report(data: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    plots = _plot(data, out)
    (out / "peers.md").write_text(markdown(data, plots))


def _peers_in(rows: list[dict]) -> list[str]:
    return [p for p in PEERS if any(r["peer"] == p for r in rows)]


def markdown(data: dict, plots: list[str]) -> str:
    runs, latency = data["runs"], data["latency"]
    sessions = {s["id"]: s for s in data["sessions"]}
    used = [sessions[i] for i in dict.fromkeys(r["session"] for r in runs + latency) if i in sessions]
    lines = ["# The pageview job through every peer", ""]
    lines += ["`python -m deltastreams.devtools.bench.peers`: the same events (seed 1: same keys, timestamps, 5% late by up to 30 s) through each peer, "
              "window 5 s, grace 10 s, duration_s >= 30, exactly once, each peer a process of its own; runs alternate between peers, "
              "best of the repetitions that passed their correctness check.", ""]
    for s in used:
        lines.append(f"- session `{s['id']}`: `{s['command']}`, {s['started']} to {s.get('ended', '(interrupted)')}; "
                     f"uptime at start `{s['uptime_start']}`, at end `{s.get('uptime_end', '?')}`")
    if used:
        m = used[-1]["machine"]
        lines += ["", f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, {m['os']}; Python {m['python']}, {m['java']}; "
                  f"pyspark {m['pyspark']}, delta-spark {m['delta_spark']}, spark-sql-kafka {m['spark_sql_kafka']}, deltalake {m['deltalake']}, "
                  f"pyarrow {m['pyarrow']}, confluent-kafka {m['confluent_kafka']} (librdkafka {m['librdkafka']}), Apache Kafka and Kafka Streams {m['kafka']}."]
    loads = [x for r in runs + latency for x in (r["load_before"][0], r["load_after"][0])]
    if loads:
        lines += ["", f"Load average (1 min) before and after each run: {min(loads):.2f} to {max(loads):.2f}."]
    lines += _throughput(data)
    lines += _latency(latency)
    lines += _correctness(runs, latency)
    lines += _profiles(runs)
    lines += ["", "## Every run", "", "| session | peer | events | commit interval | rep | whole s | steady s | load before -> after | check |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['session']} | {r['peer']} | {r['events']:,} | {r['interval_ms']} ms | {r['rep']} | {r['whole_s']:.1f} | {r['steady_s']:.1f} | "
                     f"{r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f} | {'ok' if r['check']['ok'] else 'WRONG'} |")
    for p in data.get("kafka_produce", []):
        lines.append("")
        lines.append(f"Producing {p['events']:,} events to Kafka (not part of any run): {p['seconds']:.1f} s.")
    lines += [""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def _throughput(data: dict) -> list[str]:
    runs = data["runs"]
    if not runs:
        return []
    lines = ["", "## Throughput", "",
             "Events/s over the whole process (launch to exit: JVM and session start, processing, stop) and over its steady part "
             "(first input record's processing started to last result committed, from the peer's own records: deltastreams' batch "
             "metrics, Spark's query progress, Kafka Streams' first record and committed offsets). A catch-up micro-batch reads at most "
             "interval x 1M events/s (100k records at 100 ms, 1M at 1 s) in deltastreams and Spark; Kafka Streams has no micro-batches. "
             "*vs deltastreams*: the peer's events/s over deltastreams' with the same input (above 1: the peer is faster)."]
    for events in sorted({r["events"] for r in runs}):
        lines += ["", f"### {events:,} events", "", "| peer | commit interval | whole events/s | steady events/s | vs deltastreams, whole | vs deltastreams, steady | runs (whole s) |",
                  "|---|---|---|---|---|---|---|"]
        for peer in _peers_in(runs):
            for interval in sorted({r["interval_ms"] for r in runs if r["peer"] == peer and r["events"] == events}):
                whole, steady = best(runs, peer, events, interval, "events_per_s"), best(runs, peer, events, interval, "events_per_s_steady")
                ours = SAME_SOURCE[peer]
                own_whole = best(runs, ours, events, interval, "events_per_s") if ours else None
                own_steady = best(runs, ours, events, interval, "events_per_s_steady") if ours else None
                times = ", ".join(f"{r['whole_s']:.1f}{'' if r['check']['ok'] else ' (WRONG)'}" for r in runs
                                  if r["peer"] == peer and r["events"] == events and r["interval_ms"] == interval)
                if whole is None:  # every run failed its check: its speed is shown, marked, and compared with nothing
                    failed = [r for r in runs if r["peer"] == peer and r["events"] == events and r["interval_ms"] == interval]
                    lines.append(f"| {label(peer)} | {interval} ms | ({_rate(max(r['events_per_s'] for r in failed))}: wrong result) | "
                                 f"({_rate(max(r['events_per_s_steady'] for r in failed))}: wrong result) |  |  | {times} |")
                    continue
                lines.append(f"| {label(peer)} | {interval} ms | {_rate(whole and whole['events_per_s'])} | {_rate(steady and steady['events_per_s_steady'])} | "
                             f"{_ratio(whole, own_whole, 'events_per_s')} | {_ratio(steady, own_steady, 'events_per_s_steady')} | {times} |")
    return lines


def _latency(latency: list[dict]) -> list[str]:
    if not latency:
        return []
    r0 = latency[0]
    lines = ["", "## Latency", "",
             f"A steady stream of {r0['rate']:,} events/s appended every 100 ms, each event stamped with its append time; commit interval "
             f"{r0['interval_ms']} ms. The stream starts with the peer; the results of events appended during {r0['seconds']:.0f} s count, "
             f"from {r0['settle_s']:.0f} s after the peer's first result (start-up and the catch-up of what arrived meanwhile are not latency). "
             "Latency = when a window's result became visible (Delta: its version's commit time; Kafka: received by a read_committed consumer) "
             "minus the append time of the newest event it counts.", "",
             "| peer | p50 ms | p95 ms | p99 ms | max ms | results | events | check |", "|---|---|---|---|---|---|---|---|"]
    for r in sorted(latency, key=lambda r: list(PEERS).index(r["peer"])):
        fmt = lambda k: f"{r[k]:,.0f}" if k in r else "—"  # noqa: E731
        lines.append(f"| {label(r['peer'])} | {fmt('p50_ms')} | {fmt('p95_ms')} | {fmt('p99_ms')} | {fmt('max_ms')} | {r['records']:,} | {r['events']:,} | "
                     f"{'ok' if r['check']['ok'] else 'WRONG'} |")
    return lines


def _correctness(runs: list[dict], latency: list[dict]) -> list[str]:
    lines = ["", "## Correctness", "",
             "Every run's final counts (latest revision per window) against an independent pandas computation of what that peer must output "
             "from the same events (`devtools/harness/pageview_reference.py`): deltastreams from Delta against Kafka's semantics (per-task stream time, "
             "records interleaved by timestamp), exactly; Kafka Streams, and deltastreams from Kafka (whose batches cut each partition at an "
             "offset), against the same rule over the order their repartition topic holds (checked to be a possible interleaving of the "
             "filtered input); Spark against its watermark rule over the micro-batches its progress "
             "reports (Spark's watermark of every batch compared too).", "",
             "| peer | runs checked | passed | windows (largest run) | differs from Kafka's semantics by |", "|---|---|---|---|---|"]
    for peer in _peers_in(runs + latency):
        mine = [r for r in runs + latency if r["peer"] == peer]
        largest = max((r for r in runs if r["peer"] == peer), key=lambda r: r["events"], default=None)
        versus = largest and largest["check"].get("versus_kafka_semantics")
        differs = "—" if not versus else f"{versus['windows_differing']:,} windows, {versus['records_more']:+,} records counted"
        lines.append(f"| {label(peer)} | {len(mine)} | {sum(r['check']['ok'] for r in mine)} | {largest['check']['windows'] if largest else '—'} | {differs} |")
    for r in runs + latency:
        if not r["check"]["ok"]:
            lines.append(f"\n- {r['peer']} {r.get('events', '')} @{r['interval_ms']} ms: {'; '.join(r['check']['problems'])}")
    return lines


def _profiles(runs: list[dict]) -> list[str]:
    if not runs:
        return []
    events = max(r["events"] for r in runs)
    lines = ["", f"## Where the time goes ({events:,} events, the best run of each)", ""]
    for peer in _peers_in(runs):
        for interval in sorted({r["interval_ms"] for r in runs if r["peer"] == peer and r["events"] == events}):
            r = best(runs, peer, events, interval, "events_per_s")
            if r is None:
                continue
            p = r["profile"]
            head = f"- **{label(peer)}, {interval} ms**: {r['whole_s']:.1f} s whole, {r['steady_s']:.1f} s steady"
            if peer.startswith("deltastreams"):
                subs = [f"sub-topology {k[-1]}: driver {_phases(v['driver_s'])}; tasks (summed over tasks) {_phases(v['tasks_s'])}"
                        for k, v in p.items() if k.startswith("subtopology_")]
                lines.append(f"{head}; launch to first batch {p['start_to_first_batch_s']:.1f} s; {p['batches']} triggers, their Spark jobs "
                             f"{p['trigger_jobs_s']:.1f} s (the first {p.get('first_trigger_job_s', float('nan')):.1f} s); " + "; ".join(subs))
            elif peer == "kafka-streams":
                lines.append(f"{head}; JVM start to the first record {p['jvm_to_first_record_s']:.1f} s (to RUNNING {p['jvm_to_running_s']:.1f} s), "
                             f"first record to the last count committed {p['processing_s']:.1f} s, close {p['close_s']:.1f} s")
            else:
                lines.append(f"{head}; launch to session {p['session_start_s']:.1f} s, query start to first batch {p['query_start_to_first_batch_s']:.1f} s; "
                             f"{p['data_batches']} batches with data of {p['batches']} (the first {p.get('first_batch_s', float('nan')):.1f} s); "
                             f"summed durations {_phases(p['duration_s'])}; stop {p['stop_s']:.1f} s")
    return lines


def _phases(seconds: dict) -> str:
    return ", ".join(f"{k} {v:.1f} s" for k, v in sorted(seconds.items(), key=lambda kv: -kv[1]) if v >= 0.05) or "—"


def _plot(data: dict, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    runs, latency = data["runs"], data["latency"]
    if not runs and not latency:
        return []
    groups = sorted({(r["events"], r["interval_ms"]) for r in runs})
    peers = _peers_in(runs)
    ordered = sorted((r for r in latency if "p50_ms" in r), key=lambda r: list(PEERS).index(r["peer"]))
    panels = 3 if ordered else 2
    fig, axes = plt.subplots(1, panels, figsize=(16 if ordered else 11, 4.8), gridspec_kw={"width_ratios": [2, 2, 1.3][:panels]})
    width = 0.8 / max(1, len(peers))
    for ax, key, title in ((axes[0], "events_per_s", "whole process (launch to exit)"), (axes[1], "events_per_s_steady", "steady part")):
        for i, peer in enumerate(peers):
            values = [(best(runs, peer, e, iv, key) or {}).get(key, 0) / 1e3 for e, iv in groups]
            ax.bar([g + i * width for g in range(len(groups))], values, width, label=label(peer))
        ax.set_xticks([g + width * (len(peers) - 1) / 2 for g in range(len(groups))])
        ax.set_xticklabels([f"{e / 1e6:g}M, {iv} ms" for e, iv in groups])
        ax.set_ylabel("k events/s")
        ax.set_title(f"throughput, {title}")
    axes[0].legend(fontsize=7)
    if ordered:
        xs = range(len(ordered))
        axes[2].bar([x - 0.2 for x in xs], [r["p50_ms"] for r in ordered], 0.4, label="p50")
        axes[2].bar([x + 0.2 for x in xs], [r["p99_ms"] for r in ordered], 0.4, label="p99")
        axes[2].set_xticks(list(xs))
        axes[2].set_xticklabels([r["peer"].replace("-", "\n", 1) for r in ordered], fontsize=7)
        axes[2].set_yscale("log")
        axes[2].set_ylabel("ms (log scale)")
        axes[2].set_title(f"latency, steady {ordered[0]['rate'] // 1000}k events/s, {ordered[0]['interval_ms']} ms")
        axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "peers.png", dpi=100)
    plt.close(fig)
    return ["peers.png"]
