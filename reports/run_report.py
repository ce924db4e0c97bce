"""``report.html`` for one stored run: a single self-contained file (no external assets).

Reads only files in the run directory (``spec.json``, ``history.jsonl``, ``trace.jsonl``,
``results.json``) and shows, in reading order (``reports.run_sections``): the verdict and why; the run's
date, duration, store path, links to its files and the command that repeats it; a scripted scenario's
expectation, facts and steps; the configuration; each checker's verdict; the guarantee profile (why each
anomaly kind is forbidden or allowed here, and how often it was seen); fault coverage; each fault with
what was done to which node, how long the clients saw no ok completion and how long recovery took; op
counts and latency quantiles; throughput (ok / fail / info per second by op type) and latency (one
point per op, coloured by op type) with the faults shaded and labelled; the per-partition timeline of
leader, ISR, ELR, leader epoch and high watermark from the trace; client errors by Kafka error code; the
linearizability counterexample; and every anomaly next to the history ops it names, long poll results
shortened with the offending values highlighted. Plots are matplotlib PNGs embedded as base64 data URIs;
links to the run's files are relative, so the report works where the run is stored and where a
published site copies it with its files.

The verdict is shown in the words of ``harness.verdict`` with the reasons stored in
``results.json``; the report does not judge again. Fault bands are the intervals of
``harness.faults``, the same intervals fault coverage and Spark's per-fault statistics use.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from checkers.history import read_trace
from harness import store
from harness.faults import FaultInterval, end_of, fault_timeline, nemesis_ops
from harness.history import completed_ops, read_history
from harness.verdict import Verdict
from reports import run_sections as sections
from reports.findings import FINDING_CHECKERS, findings
from reports.group_timeline import group_section
from reports.html import STATUS_COLORS, esc, page
from reports.run_facts import client_pairs, fault_impact, labelled_faults
from reports.scenario_block import scenario_html
from reports.trace_timeline import partition_timelines

LINKED_FILES = (store.SPEC, store.RESULTS, store.HISTORY, store.TRACE, "harness.log", "client.log", store.CLOCK)
"""Files of a run directory the report links to (when present), then each node's log."""


def nemesis_intervals(ops: list[dict], end_ns: int | None = None) -> list[FaultInterval]:
    """``(start_ns, end_ns, f)`` for every fault of the history, as ``harness.faults`` defines them;
    ``end_ns`` (default: the last op's time) ends the faults never healed."""
    return fault_timeline(nemesis_ops(ops), end_of(ops) if end_ns is None else end_ns).intervals


def latency_points(ops: list[dict]) -> list[tuple[float, float, str, str]]:
    """``(invoke time s, latency ms, completion type, f)`` for each completed client op."""
    points = []
    for op in completed_ops(ops):
        if op["complete_time"] is None or op["process"] == "nemesis":
            continue
        points.append((op["invoke_time"] / 1e9, (op["complete_time"] - op["invoke_time"]) / 1e6,
                       op["type"], op["f"]))
    return points


def counts(ops: list[dict]) -> dict[str, Counter]:
    """Completions by ``f`` then type (client ops and nemesis ops separately)."""
    out: dict[str, Counter] = {}
    for op in ops:
        if op["type"] == "invoke":
            continue
        f = op["f"] if op["process"] != "nemesis" else f"nemesis:{op['f']}"
        if op.get("final"):
            f += " (final)"
        out.setdefault(f, Counter())[op["type"]] += 1
    return out


def anomalies(results: dict[str, Any]) -> list[tuple[str, str, list[Any]]]:
    """``(checker, kind, entries)`` for every non-empty list of findings in the results.

    Checker results differ in shape (``anomalies: {kind: [...]}``, ``invariants: {I1: {violations:
    [...]}}``, ...): any non-empty list of dicts within three levels under a checker counts as findings,
    named by its path. The guarantee profile (configuration, not findings) is skipped.
    """
    found: list[tuple[str, str, list[Any]]] = []

    def walk(checker: str, path: list[str], value: Any, depth: int) -> None:
        if isinstance(value, list):
            if value and all(isinstance(v, dict) for v in value) and path:
                found.append((checker, "/".join(p for p in path if p not in ("anomalies", "violations"))
                              or path[-1], value))
            return
        if isinstance(value, dict) and depth < 3:
            for key, item in sorted(value.items()):
                if key in ("profile", "coverage", "malformed", "pairing_problems"):
                    continue
                walk(checker, [*path, str(key)], item, depth + 1)

    for name, result in sorted((results.get("checkers") or {}).items()):
        walk(name, [], result, 0)
    return found


def render(spec: dict, ops: list[dict], results: dict, malformed: int = 0, events: list[dict] | None = None,
           run_dir: str | None = None, files: list[str] | None = None) -> str:
    """The report as an HTML string (``events``: the trace, None when the run has none; ``files``: the run's
    files to link, relative to the report)."""
    verdict = Verdict.of(results)
    word = verdict.word
    title = spec.get("scenario") or spec.get("test_name") or "run"
    found = findings(results)
    by_index = {op["index"]: op for op in ops}
    main_pairs = client_pairs(ops)
    labelled = labelled_faults(ops)
    end_ns = end_of(ops)
    body = [f"<h1>kraftcheck run: {esc(title)}</h1>",
            f"<p class='verdict' style='color:{STATUS_COLORS.get(word, '#9a6700')}'>{word}</p>"]
    if "reasons" in results:
        why = list(verdict.reasons)
    else:  # results.json written before the verdict carried its reasons
        why = list(results.get("harness_notes") or [])
        why.extend(f"{key}: {results[key]}" for key in ("error", "harness_error") if results.get(key))
    if why:
        body.append(f"<h2>Why {word}</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in why) + "</ul>")
    body += sections.run_info(spec, end_ns, run_dir, files or [])
    if isinstance(results.get("scenario"), dict):
        body.append(scenario_html(results["scenario"]))
    body += sections.configuration(spec)
    body += sections.checkers(results)
    body += sections.profile(results, found)
    body += sections.coverage(results)
    body += sections.faults(fault_impact(labelled, client_pairs(ops, final=True)))
    body += sections.operations(counts(ops), main_pairs, malformed)
    body += sections.plots(main_pairs, labelled)
    body += sections.timeline(partition_timelines(events or [], spec.get("topic")), labelled, end_ns,
                              events is not None)
    body += group_section(ops, labelled)
    body += sections.errors(ops)
    body += sections.counterexample(found, by_index)
    covered = {f.checker for f in found} | set(FINDING_CHECKERS)
    other = [a for a in anomalies(results) if a[0] not in covered]
    body += sections.anomalies_section(found, other, by_index)
    return page(f"kraftcheck {title}: {word}", body)


def linked_files(run_dir: Path) -> list[str]:
    """The run's files a report links to, relative to the run directory, that exist."""
    names = [name for name in LINKED_FILES if (run_dir / name).is_file()]
    nodes = run_dir / store.NODES
    if nodes.is_dir():
        names += sorted(p.relative_to(run_dir).as_posix() for p in nodes.glob("*/node.log"))
    return names


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Render the report of the run stored in ``run_dir`` into ``out`` (default ``run_dir/report.html``);
    return its path. Links to the run's files are relative: ``out`` belongs beside copies of them."""
    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir / store.REPORT
    out.write_text(report_text(run_dir), encoding="utf-8")
    return out


def report_text(run_dir: str | Path) -> str:
    """The report of the run stored in ``run_dir`` as HTML, read from its files."""
    run_dir = Path(run_dir)
    spec = _read_json(run_dir / store.SPEC)
    results = _read_json(run_dir / store.RESULTS)
    ops: list[dict] = []
    malformed = 0
    history_path = run_dir / store.HISTORY
    if history_path.is_file():
        history = read_history(history_path)
        ops, malformed = history.ops, len(history.malformed)
    trace_path = run_dir / store.TRACE
    events = read_trace(trace_path, []) if trace_path.is_file() else None
    return render(spec, ops, results, malformed, events, str(run_dir.resolve()), linked_files(run_dir))


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
