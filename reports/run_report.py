"""``report.html`` for one stored run: a single self-contained file (no external assets).

Reads only files in the run directory (``spec.json``, ``history.jsonl``, ``results.json``) and shows: the
verdict and why (checker verdicts, harness notes, fault coverage), op counts by function and outcome,
latency over time (one dot per completed client op, coloured by outcome) with the intervals during which
a nemesis fault was in place shaded, and the anomalies the checkers reported together with the history
ops they name. Plots are matplotlib PNGs embedded as base64 data URIs, so the file can be mailed or
attached to a CI run as is.

Nemesis intervals: a fault op (per ``nemesis.coverage.FAMILY_FS`` when available, else any nemesis op
that is not a known healing op) opens an interval at its invocation; the next healing op (``start``,
``resume``, ``stop-partition``, ``reset-clock``, ``heal``) closes every open interval at its completion.
Instantaneous faults (power loss, admin actions) get a band of their own duration.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from harness.history import pair_ops, read_history

HEAL_FS = {"start", "resume", "stop-partition", "reset-clock", "heal"}
INSTANT_FS = {"power-loss", "lose-unsynced", "reassign", "cancel-reassignment", "elect-preferred",
              "elect-unclean", "set-reassignment-mode"}
OP_REF_KEYS = ("op", "ops", "writer", "reader", "earlier", "later", "cycle", "max_read")
MAX_ROWS = 50


def _fault_fs() -> set[str] | None:
    try:
        from nemesis.coverage import F_FAMILY
    except ImportError:
        return None
    return set(F_FAMILY)


def nemesis_intervals(ops: list[dict], end_ns: int | None = None) -> list[tuple[int, int, str]]:
    """``(start_ns, end_ns, f)`` for every fault in the history (see the module docstring)."""
    fault_fs = _fault_fs()
    intervals: list[tuple[int, int, str]] = []
    open_faults: list[tuple[int, str]] = []
    pending_instant: dict[str, int] = {}
    end_ns = end_ns if end_ns is not None else (ops[-1]["time"] if ops else 0)
    for op in ops:
        if op.get("process") != "nemesis":
            continue
        f = op["f"]
        is_fault = f in fault_fs if fault_fs is not None else f not in HEAL_FS
        if op["type"] == "invoke":
            if f in INSTANT_FS:
                pending_instant[f] = op["time"]
            elif is_fault:
                open_faults.append((op["time"], f))
            continue
        if f in INSTANT_FS and f in pending_instant:
            intervals.append((pending_instant.pop(f), op["time"], f))
        elif f in HEAL_FS:
            intervals.extend((start, op["time"], name) for start, name in open_faults)
            open_faults = []
    intervals.extend((start, end_ns, name) for start, name in open_faults)
    return sorted(intervals)


def latency_points(ops: list[dict]) -> list[tuple[float, float, str, str]]:
    """``(invoke time s, latency ms, completion type, f)`` for each completed client op."""
    pairs, _ = pair_ops(ops)
    points = []
    for invoke, completion in pairs:
        if completion is None or invoke["process"] == "nemesis":
            continue
        points.append((invoke["time"] / 1e9, (completion["time"] - invoke["time"]) / 1e6,
                       completion["type"], invoke["f"]))
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


def latency_png(ops: list[dict]) -> str | None:
    """The latency-over-time plot as a base64 PNG (None when there is nothing to plot)."""
    points = latency_points(ops)
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4), dpi=100)
    try:
        end = max(op["time"] for op in ops)
        for start, stop, _f in nemesis_intervals(ops, end):
            ax.axvspan(start / 1e9, max(stop, start + 50_000_000) / 1e9, color="tab:red", alpha=0.12, lw=0)
        colors = {"ok": "tab:blue", "fail": "tab:orange", "info": "tab:red"}
        for type_ in ("ok", "fail", "info"):
            xs = [p[0] for p in points if p[2] == type_]
            ys = [max(p[1], 0.01) for p in points if p[2] == type_]
            if xs:
                ax.scatter(xs, ys, s=6, c=colors[type_], label=f"{type_} ({len(xs)})", alpha=0.7)
        ax.set_yscale("log")
        ax.set_xlabel("time since run start (s)")
        ax.set_ylabel("latency (ms)")
        ax.set_title("client op latency (shaded: nemesis faults in place)")
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _referenced_indices(entry: Any) -> list[int]:
    refs: list[int] = []
    if not isinstance(entry, dict):
        return refs
    for key in OP_REF_KEYS:
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            refs.append(value)
        elif isinstance(value, list):
            refs.extend(v for v in value if isinstance(v, int) and not isinstance(v, bool))
    return refs


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


def _esc(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else json.dumps(value, default=str))


def render(spec: dict, ops: list[dict], results: dict, malformed: int = 0) -> str:
    """The report as an HTML string."""
    valid = results.get("valid", "unknown")
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN") if isinstance(valid, bool) else "UNKNOWN"
    color = {"VALID": "#1a7f37", "INVALID": "#cf222e"}.get(word, "#9a6700")
    by_index = {op["index"]: op for op in ops}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>kraftcheck {_esc(spec.get('test_name', 'run'))}: {word}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
        "font-size:13px;text-align:left;vertical-align:top}code,pre{font-size:12px}"
        ".verdict{font-size:2em;font-weight:bold}</style></head><body>",
        f"<h1>kraftcheck run: {_esc(spec.get('test_name', 'run'))}</h1>",
        f"<p class='verdict' style='color:{color}'>{word}</p>",
    ]
    notes = list(results.get("harness_notes") or [])
    for key in ("error", "harness_error"):
        if results.get(key):
            notes.append(f"{key}: {results[key]}")
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_esc(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h2>Configuration</h2><table>")
    for key in ("seed", "backend", "variant", "acks", "min_isr", "replication_factor", "brokers", "keys",
                "unclean_leader_election", "flush_messages", "flush_ms", "nemesis", "time_limit_s", "rate",
                "concurrency", "git_commit", "image"):
        if key in spec:
            parts.append(f"<tr><th>{key}</th><td>{_esc(spec[key])}</td></tr>")
    parts.append("</table>")
    checkers = results.get("checkers") or {}
    if checkers:
        parts.append("<h2>Checkers</h2><table><tr><th>checker</th><th>verdict</th></tr>")
        for name, result in sorted(checkers.items()):
            verdict = result.get("valid") if isinstance(result, dict) else result
            parts.append(f"<tr><td>{_esc(name)}</td><td>{_esc(verdict)}</td></tr>")
        parts.append("</table>")
    if results.get("not_checked"):  # what the verdict does not cover, and why (checkers.analysis)
        parts.append("<h2>Not checked</h2><ul>" + "".join(f"<li>{_esc(n)}</li>" for n in results["not_checked"])
                     + "</ul>")
    coverage = results.get("coverage")
    if coverage:
        parts.append("<h2>Fault coverage</h2><table><tr><th>family</th><th>requested</th><th>attempted</th>"
                     "<th>effective</th><th>failed</th></tr>")
        for family, row in sorted(coverage.items()):
            parts.append(f"<tr><td>{_esc(family)}</td><td>{_esc(row.get('requested'))}</td>"
                         f"<td>{row.get('attempted')}</td><td>{row.get('effective')}</td>"
                         f"<td>{row.get('failed')}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Operations</h2><table><tr><th>f</th><th>ok</th><th>fail</th><th>info</th></tr>")
    for f, counter in sorted(counts(ops).items()):
        parts.append(f"<tr><td>{_esc(f)}</td><td>{counter['ok']}</td><td>{counter['fail']}</td>"
                     f"<td>{counter['info']}</td></tr>")
    parts.append("</table>")
    if malformed:
        parts.append(f"<p>{malformed} malformed history line(s) were skipped.</p>")
    png = latency_png(ops)
    parts.append("<h2>Latency over time</h2>")
    parts.append(f"<img alt='latency' src='data:image/png;base64,{png}'>" if png else "<p>No client ops.</p>")
    found = anomalies(results)
    parts.append("<h2>Anomalies</h2>")
    if not found:
        parts.append("<p>None reported.</p>")
    for checker, kind, entries in found:
        parts.append(f"<h3>{_esc(checker)}: {_esc(kind)} ({len(entries)})</h3><table>")
        for entry in entries[:MAX_ROWS]:
            refs = [by_index[i] for i in _referenced_indices(entry) if i in by_index]
            shown = "".join(f"<div><code>{_esc(op)}</code></div>" for op in refs[:6])
            parts.append(f"<tr><td><code>{_esc(entry)}</code></td><td>{shown}</td></tr>")
        if len(entries) > MAX_ROWS:
            parts.append(f"<tr><td colspan=2>... {len(entries) - MAX_ROWS} more in results.json</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(run_dir: str | Path) -> Path:
    """Render ``report.html`` into ``run_dir`` from its stored files; return its path."""
    run_dir = Path(run_dir)
    spec = _read_json(run_dir / "spec.json")
    results = _read_json(run_dir / "results.json")
    history_path = run_dir / "history.jsonl"
    ops: list[dict] = []
    malformed = 0
    if history_path.is_file():
        history = read_history(history_path)
        ops, malformed = history.ops, len(history.malformed)
    out = run_dir / "report.html"
    out.write_text(render(spec, ops, results, malformed), encoding="utf-8")
    return out


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
