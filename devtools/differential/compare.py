"""Comparing what Kafka Streams and deltastreams made of one scenario, and shrinking a scenario
that shows a difference to a minimal one that still does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from deltastreams.devtools.differential.scenarios import Scenario


@dataclass(frozen=True)
class Difference:
    kind: str
    """``describe``, ``error`` (one side failed, the other did not) or ``outputs``."""
    detail: str


def differences(kafka: dict, ours: dict, *, dropped: bool = True) -> list[Difference]:
    """What differs; ``dropped``: whether the dropped-records counts must agree too (Kafka's
    task metric ``dropped-records-total``, our driver's ``dropped_records``)."""
    found = []
    if kafka.get("describe") != ours.get("describe"):
        found.append(Difference("describe", _describe_diff(kafka.get("describe") or "", ours.get("describe") or "")))
    if bool(kafka.get("error")) != bool(ours.get("error")):
        found.append(Difference("error", f"Kafka Streams: {kafka.get('error') or 'no error'}\ndeltastreams: {ours.get('error') or 'no error'}"))
    elif kafka.get("outputs", []) != ours.get("outputs", []):
        found.append(Difference("outputs", _outputs_diff(kafka.get("outputs", []), ours.get("outputs", []))))
    elif dropped and not kafka.get("error") and kafka.get("dropped") is not None and ours.get("dropped") is not None and kafka["dropped"] != ours["dropped"]:
        found.append(Difference("dropped", f"dropped records: Kafka Streams {kafka['dropped']:g}, deltastreams {ours['dropped']:g}"))
    return found


def _describe_diff(kafka: str, ours: str) -> str:
    import difflib

    lines = difflib.unified_diff(kafka.splitlines(), ours.splitlines(), "Kafka Streams", "deltastreams", lineterm="", n=2)
    return "\n".join(lines)


def _outputs_diff(kafka: list[dict], ours: list[dict]) -> str:
    first = next((i for i, (k, o) in enumerate(zip(kafka, ours)) if k != o), min(len(kafka), len(ours)))
    lines = [f"{len(kafka)} records from Kafka Streams, {len(ours)} from deltastreams; the first difference is record {first}:"]
    for i in range(max(0, first - 2), min(max(len(kafka), len(ours)), first + 3)):
        mark = ">" if i == first else " "
        lines.append(f"{mark} {i:3d} kafka: {_short(kafka[i]) if i < len(kafka) else '-'}")
        lines.append(f"{mark}     ours:  {_short(ours[i]) if i < len(ours) else '-'}")
    return "\n".join(lines)


def _short(record: dict) -> str:
    window = f"[{record['window_start']},{record['window_end']}]" if "window_start" in record else ""
    headers = f" h={record['headers']}" if record.get("headers") else ""
    return f"{record['topic']} {record['key']!r}{window} -> {record['value']!r} @{record['timestamp']}{headers}"


def shrink(scenario: Scenario, differs: Callable[[Scenario], bool]) -> Scenario:
    """The smallest scenario found by dropping input records (halves first, then one at a time)
    for which ``differs`` still holds."""
    inputs = list(scenario.inputs)
    chunk = max(1, len(inputs) // 2)
    while chunk >= 1:
        i, shrunk = 0, False
        while i < len(inputs):
            candidate = inputs[:i] + inputs[i + chunk:]
            if candidate and differs(scenario.with_inputs(candidate)):
                inputs, shrunk = candidate, True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    return scenario.with_inputs(inputs)
