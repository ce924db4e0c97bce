"""The pages of a published conformance report, rendered from a catalog of runs (no I/O but histories).

Pages (all self-contained HTML, linked relatively so the site reads the same from a file system and
from ``kraftcheck serve``):

- ``index.html``: the matrix (rows scenarios / workloads, columns system under test (the reference
  implementation's variant, or another system and its setting) x fault mix x backend), one
  badge per run linking to its report, the counts by status, the known issues and unexpected outcomes;
- ``anomalies.html``: per anomaly kind and per invariant, how often it was seen, in which cells, under
  which profile status, with the first proving example and the history ops it names;
- ``known-issues.html``: each known issue explained (what was acknowledged, what was lost, which rule of
  which variant allows it, what fixes it), each run that showed it, its reproduction command;
- ``runs.html``: every run with its status, reasons and reproduction command;
- ``tables.html``: the cross-run tables of the Spark aggregation (anomaly counts, availability and
  latency per fault mix and nemesis state, time to recovery), when they were computed;
- ``environment.html``: kraftcheck version and commit, libraries, backends, machine.

``summary`` is the same content as data (``summary.json``). Run reports live at
``runs/<run path>/report.html`` beside copies of the run's files (``run_href``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness import store
from harness.history import read_history
from reports.catalog import STATUSES, Catalog, Column, RunRecord, cell_status
from reports.findings import Finding, op_refs
from reports.html import STATUS_BACKGROUNDS, badge, esc, page, table
from reports.known_issues import ISSUES, LRS_NAMES, evidence, scenario_section
from reports.ops_html import example_rows

PAGES = {"index.html": "Matrix", "anomalies.html": "Anomalies and invariants",
         "known-issues.html": "Known issues", "runs.html": "Runs", "tables.html": "Cross-run tables",
         "environment.html": "Environment"}
MAX_PROOF_OPS = 8
LIVE_REFRESH_S = 10


@dataclass(frozen=True)
class Aggregate:
    """The Spark aggregation's summary (``spark_analysis.aggregate.aggregate_store``) and where its files
    are relative to the site; ``summary`` is None when it was not computed, ``note`` says why."""

    summary: dict[str, Any] | None
    note: str = ""
    files: str = "aggregate"


@dataclass(frozen=True)
class KindSummary:
    """One anomaly kind or invariant across the store: every run that showed it, in path order."""

    checker: str
    kind: str
    seen: tuple[tuple[RunRecord, Finding], ...]

    @property
    def total(self) -> int:
        """Occurrences over all runs."""
        return sum(f.count for _, f in self.seen)

    @property
    def statuses(self) -> dict[str, int]:
        """Profile status -> runs."""
        return dict(Counter(f.status for _, f in self.seen))


def run_href(record: RunRecord, name: str = store.REPORT) -> str:
    """Site-relative link to a run's report (or another of its files)."""
    return f"runs/{record.path}/{name}"


def kind_summaries(catalog: Catalog) -> list[KindSummary]:
    """Anomaly kinds and invariants seen anywhere in the store, queue kinds first, then invariants."""
    seen: dict[tuple[str, str], list[tuple[RunRecord, Finding]]] = {}
    for record in catalog.runs:
        for finding in record.findings:
            seen.setdefault((finding.checker, finding.kind), []).append((record, finding))
    order = {"queue": 0, "groups": 1, "linear": 2, "recovery": 3, "invariants": 4}
    keys = sorted(seen, key=lambda k: (order.get(k[0], 4), _natural(k[1])))
    return [KindSummary(c, k, tuple(seen[(c, k)])) for c, k in keys]


def render_site(catalog: Catalog, aggregate: Aggregate, environment: dict[str, Any],
                live: bool = False) -> dict[str, str]:
    """Every page of the site: file name -> HTML."""
    kinds = kind_summaries(catalog)
    head = f"<meta http-equiv='refresh' content='{LIVE_REFRESH_S}'>" if live else ""
    bodies = {
        "index.html": _index(catalog, kinds, live),
        "anomalies.html": _anomalies(catalog, kinds),
        "known-issues.html": _known_issues(catalog),
        "runs.html": _runs(catalog),
        "tables.html": _tables(aggregate),
        "environment.html": _environment(environment),
    }
    return {name: page(f"kraftcheck: {PAGES[name]}", body, _nav(name), head if name == "index.html" else "")
            for name, body in bodies.items()}


def summary(catalog: Catalog, aggregate: Aggregate, environment: dict[str, Any]) -> dict[str, Any]:
    """The site as data (``summary.json``)."""
    columns = catalog.columns()
    return {
        "store": str(catalog.root),
        "counts": dict(Counter(r.status for r in catalog.runs)),
        "matrix": {
            "rows": catalog.rows(),
            "columns": [vars(c) for c in columns],
            "cells": [{"row": row, **vars(col), "status": cell_status(runs),
                       "runs": [r.path for r in runs]}
                      for row in catalog.rows() for col in columns if (runs := catalog.cell(row, col))],
        },
        "runs": [_run_data(r) for r in catalog.runs],
        "anomalies": [{"checker": k.checker, "kind": k.kind, "total": k.total, "runs": len(k.seen),
                       "statuses": k.statuses,
                       "cells": sorted({f"{r.row} | {r.column.label}" for r, _ in k.seen}),
                       "first": {"run": k.seen[0][0].path, "example": k.seen[0][1].examples[:1]}}
                      for k in kind_summaries(catalog)],
        "known_issues": [{"key": key, "title": issue.title, "variant": issue.variant,
                          "reference": issue.reference, "rule": issue.rule,
                          "runs": [{"run": r.path, "reproduce": r.reproduce, **evidence(r.results, list(r.findings))}
                                   for r in catalog.runs if key in r.known_issues]}
                         for key, issue in ISSUES.items()],
        "aggregate": aggregate.summary, "aggregate_note": aggregate.note,
        "environment": environment,
    }


# -- pages ----------------------------------------------------------------------------------------------


def _nav(current: str) -> str:
    links = [f"<b>{esc(title)}</b>" if name == current else f"<a href='{name}'>{esc(title)}</a>"
             for name, title in PAGES.items()]
    return "<nav>" + "".join(links) + "<a href='summary.json'>summary.json</a></nav>"


def _index(catalog: Catalog, kinds: list[KindSummary], live: bool) -> list[str]:
    counts = Counter(r.status for r in catalog.runs)
    parts = ["<h1>kraftcheck conformance report</h1>",
             f"<p>Store <code>{esc(str(catalog.root))}</code>: {len(catalog.runs)} runs"
             + (f", suite <code>{esc(str(catalog.suite.get('name', 'suite.json')))}</code>"
                if isinstance(catalog.suite, dict) else "") + ". "
             + " ".join(badge(s, f"{s}: {counts.get(s, 0)}") for s in STATUSES) + "</p>"]
    if live:
        parts.append(f"<p class='muted'>Live view: re-rendered from the store on every request; this page "
                     f"reloads every {LIVE_REFRESH_S} s.</p>")
    parts.append("<h2>Matrix</h2><p class='muted'>Rows: scenarios and workloads. Columns: system under test (the "
                 "reference implementation's protocol variant, or another system and its setting) / "
                 "fault mix / backend. Each badge is one run and links to its report; a cell takes the colour "
                 "of its most pressing run. <span class='flag'>!</span> marks an outcome that is not the "
                 "expected one.</p>")
    parts.append(_matrix(catalog) if catalog.runs else "<p>No runs in this store.</p>")
    shown = [(k, [r for r in catalog.runs if k in r.known_issues]) for k in ISSUES]
    if any(runs for _, runs in shown):
        parts.append("<h2>Known issues</h2><ul>")
        for key, runs in shown:
            if runs:
                parts.append(f"<li><a href='known-issues.html#{key}'>{esc(ISSUES[key].title)}</a>: shown by "
                             f"{len(runs)} run(s) on {esc(', '.join(sorted({r.column.system_label for r in runs})))}"
                             "</li>")
        parts.append("</ul>")
    unexpected = [r for r in catalog.runs if r.as_expected is False]
    parts.append("<h2>Unexpected outcomes</h2>")
    if unexpected:
        parts.append(table(["run", "cell", "expected", "verdict", "why"],
                           [(f"<a href='{run_href(r)}'>{esc(r.path)}</a>", f"{r.row} | {r.column.label}",
                             r.expected, r.verdict, r.explanation) for r in unexpected], raw=[0]))
    else:
        parts.append("<p>None: every run with an expectation met it.</p>")
    forbidden = [k for k in kinds if k.statuses.get("forbidden")]
    parts.append(f"<h2>Findings</h2><p>{len(kinds)} anomaly kinds or invariants seen, "
                 f"{len(forbidden)} of them where the guarantee profile forbids them: "
                 + (", ".join(f"<a href='anomalies.html#{_anchor(k)}'>{esc(k.kind)}</a>" for k in forbidden)
                    or "none") + ". <a href='anomalies.html'>All findings</a>.</p>")
    return parts


def _matrix(catalog: Catalog) -> str:
    columns = catalog.columns()
    head = "".join(f"<th data-column='{esc(c.label)}'>{esc(c.system_label)}<br>{esc(c.fault_mix)}<br>"
                   f"<span class='muted'>{esc(c.backend)}</span></th>" for c in columns)
    rows = []
    for row in catalog.rows():
        cells = [f"<th>{esc(row)}</th>"]
        for column in columns:
            cells.append(_cell(row, column, catalog.cell(row, column)))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table id='matrix'><tr><th>scenario / workload</th>{head}</tr>" + "".join(rows) + "</table>")


def _cell(row: str, column: Column, runs: list[RunRecord]) -> str:
    attrs = f"class='cell' data-row='{esc(row)}' data-column='{esc(column.label)}'"
    if not runs:
        return f"<td {attrs} data-status=''><span class='muted'>not run</span></td>"
    status = cell_status(runs)
    badges = []
    for r in runs:
        flag = "<span class='flag' title='not the expected outcome'>!</span>" if r.as_expected is False else ""
        badges.append(badge(r.status, href=run_href(r), title=f"{r.path}: {r.explanation or r.verdict}") + flag)
    return (f"<td {attrs} data-status='{esc(status)}' style='background:{STATUS_BACKGROUNDS[status]}'>"
            + "".join(badges) + "</td>")


def _anomalies(catalog: Catalog, kinds: list[KindSummary]) -> list[str]:
    parts = ["<h1>Anomalies and invariants</h1>",
             "<p>Every anomaly kind the queue checker reported, every invariant the trace checker found "
             "violated and every non-linearizable key, over all runs. The status is the guarantee "
             "profile's for that run: <b>forbidden</b> (a violation), <b>allowed</b> (no guarantee in that "
             "configuration), <b>known-issue</b> / <b>expected</b> (a documented weakness, see "
             "<a href='known-issues.html'>known issues</a>).</p>"]
    if not kinds:
        parts.append("<p>None seen in any run.</p>")
        return parts
    rows = []
    for k in kinds:
        cells = sorted({f"{r.row} | {r.column.label}" for r, _ in k.seen})
        rows.append((f"<a href='#{_anchor(k)}'>{esc(k.checker)}: {esc(k.kind)}</a>", k.total, len(k.seen),
                     ", ".join(f"{s} in {n}" for s, n in sorted(k.statuses.items())), "; ".join(cells)))
    parts.append(table(["kind / invariant", "occurrences", "runs", "status (runs)", "cells"], rows, raw=[0]))
    for k in kinds:
        record, finding = k.seen[0]
        parts.append(f"<h2 id='{_anchor(k)}'>{esc(k.checker)}: {esc(k.kind)}</h2>")
        if finding.reason:
            parts.append(f"<p class='muted'>{esc(finding.reason)}</p>")
        parts.append(table(["run", "cell", "count", "status"],
                           [(f"<a href='{run_href(r)}'>{esc(r.path)}</a>", f"{r.row} | {r.column.label}",
                             f.count, f.status) for r, f in k.seen], raw=[0]))
        parts.append(f"<p>First proof, in <a href='{run_href(record)}'>{esc(record.path)}</a>:</p>")
        parts.append(_proof(record, finding))
    return parts


def _proof(record: RunRecord, finding: Finding) -> str:
    if not finding.examples:
        return "<p class='muted'>The checker kept no example.</p>"
    example = finding.examples[0]
    refs = list(dict.fromkeys(op_refs(example)))[:MAX_PROOF_OPS]
    ops = _ops_at(record, refs) if refs else {}
    return table(["", ""], example_rows(example, ops, refs), raw=[0, 1])


def _ops_at(record: RunRecord, indices: list[int]) -> dict[int, dict]:
    path = record.run_dir / store.HISTORY
    if not path.is_file():
        return {}
    wanted = set(indices)
    return {op["index"]: op for op in read_history(path).ops if op.get("index") in wanted}


def _known_issues(catalog: Catalog) -> list[str]:
    parts = ["<h1>Known issues</h1>",
             "<p>Documented weaknesses of a protocol variant, reproduced or met by chance in this store. "
             "They are not bugs of the implementation under test: the variant's rules allow them.</p>"]
    for key, issue in ISSUES.items():
        runs = [r for r in catalog.runs if key in r.known_issues]
        others = [r for r in catalog.runs if key not in r.known_issues
                  and scenario_section(r.results).get("name") in LRS_NAMES]
        parts.append(f"<h2 id='{esc(key)}'>{esc(issue.title)} ({esc(issue.variant)})</h2>")
        parts.append(table(["", ""], [("what happens", issue.summary),
                                      ("which rule allows it", issue.rule),
                                      ("invariants broken", issue.broken),
                                      ("what fixes it", issue.fixed_by),
                                      ("reference", issue.reference)]))
        if not runs:
            parts.append("<p>No run in this store showed it.</p>")
        for r in runs:
            ev = evidence(r.results, list(r.findings))
            parts.append(f"<h3>Shown by <a href='{run_href(r)}'>{esc(r.path)}</a> "
                         f"({esc(r.row)} | {esc(r.column.label)})</h3>")
            rows = [("acknowledged", ev["acknowledged"] if ev["acknowledged"] is not None
                     else "(a random run: only the lost writes are listed)"),
                    ("acknowledged and lost", ev["lost"])]
            if ev["label"]:
                rows.append(("judgement", ev["label"]))
            rows.extend((k, v) for k, v in ev["facts"].items())
            rows.append(("reproduce", f"<code>{esc(r.reproduce)}</code>"))
            parts.append(table(["", ""], [(k, v if k == "reproduce" else esc(v)) for k, v in rows], raw=[1]))
        if others:
            parts.append("<h3>The same reproduction where it did not happen</h3>")
            parts.append(table(
                ["run", "cell", "status", "expectation", "acknowledged and lost", "reproduce"],
                [(f"<a href='{run_href(r)}'>{esc(r.path)}</a>", f"{r.row} | {r.column.label}", badge(r.status),
                  scenario_section(r.results).get("expectation"),
                  (scenario_section(r.results).get("facts") or {}).get("acknowledged and lost"),
                  f"<code>{esc(r.reproduce)}</code>") for r in others], raw=[0, 2, 5]))
    return parts


def _runs(catalog: Catalog) -> list[str]:
    rows = [(f"<a href='{run_href(r)}'>{esc(r.path)}</a>", r.row, r.column.label, badge(r.status), r.verdict,
             r.expected or "", r.explanation, f"<code>{esc(r.reproduce)}</code>") for r in catalog.runs]
    return ["<h1>Runs</h1>", table(["run", "row", "column", "status", "verdict", "expected", "why",
                                    "reproduce"], rows, raw=[0, 3, 7])]


def _tables(aggregate: Aggregate) -> list[str]:
    parts = ["<h1>Cross-run tables</h1>"]
    s = aggregate.summary
    if not s:
        parts.append(f"<p>Not computed: {esc(aggregate.note or 'no aggregation was run')}.</p>")
        return parts
    parts.append(f"<p>Computed by the Spark aggregation over {s.get('runs')} runs with histories "
                 f"({esc(aggregate.note)}). Files: "
                 + ", ".join(f"<a href='{aggregate.files}/{n}.csv'>{n}.csv</a>"
                             for n in ("runs", "by_mix", "availability", "recovery"))
                 + f", <a href='{aggregate.files}/summary.json'>summary.json</a>.</p>")
    kinds = list(s.get("kinds") or [])
    by_mix = s.get("by_mix") or []
    seen_kinds = [k for k in kinds if any(row.get(k) for row in by_mix)]
    parts.append("<h2>Anomaly counts by fault mix and variant</h2>")
    parts.append(table(["fault mix", "variant", "runs", "with anomalies", "valid", "invalid", "unknown",
                        *seen_kinds],
                       [(r.get("fault_mix"), r.get("variant"), r.get("runs"), r.get("runs_with_anomalies"),
                         r.get("verdict_valid"), r.get("verdict_invalid"), r.get("verdict_unknown"),
                         *(r.get(k) for k in seen_kinds)) for r in by_mix], attrs="id='by-mix'"))
    parts.append("<h2>Availability and latency per fault mix and nemesis state</h2><p class='muted'>An op is "
                 "in state <b>fault</b> when it was invoked while a fault was in place. Latency quantiles of "
                 "the ok ops, in ms.</p>")
    parts.append(table(["fault mix", "variant", "state", "f", "ops", "ok", "fail", "info", "p50", "p90", "p99",
                        "max"],
                       [(r.get("fault_mix"), r.get("variant"), r.get("state"), r.get("f"), r.get("ops"),
                         _pct(r.get("ok_rate")), _pct(r.get("fail_rate")), _pct(r.get("info_rate")),
                         *(_ms(r.get(q)) for q in ("p50_ms", "p90_ms", "p99_ms", "max_ms")))
                        for r in s.get("availability") or []], attrs="id='availability'"))
    parts.append("<h2>Time to recovery</h2><p class='muted'>From a heal to the completion of the first ok "
                 "client op invoked after it, in ms.</p>")
    parts.append(table(["fault mix", "variant", "heals", "never recovered", "p50", "p90", "p99", "max"],
                       [(r.get("fault_mix"), r.get("variant"), r.get("heals"), r.get("never_recovered"),
                         *(_ms(r.get(q)) for q in ("p50_ms", "p90_ms", "p99_ms", "max_ms")))
                        for r in s.get("recovery") or []], attrs="id='recovery'"))
    return parts


def _environment(env: dict[str, Any]) -> list[str]:
    publisher = env.get("publisher") or {}
    parts = ["<h1>Environment</h1>",
             f"<p>Generated {esc(env.get('generated_utc', ''))} by kraftcheck "
             f"{esc(publisher.get('kraftcheck'))}, commit <code>{esc(publisher.get('git_commit'))}</code>"
             + (" (with uncommitted changes)" if publisher.get("git_dirty") else "") + ".</p>",
             "<h2>Recorded by the runs</h2><p class='muted'>From each run's spec.json: value (runs).</p>",
             table(["key", "values (runs)"], [(k, ", ".join(f"{v} ({n})" for v, n in values.items()))
                                              for k, values in (env.get("runs") or {}).items()]),
             "<h2>Clients and libraries</h2><p class='muted'>Installed where this site was generated.</p>",
             table(["distribution", "version"], sorted((env.get("libraries") or {}).items())),
             "<h2>Machine</h2><p class='muted'>Where this site was generated; runs do not record theirs.</p>",
             table(["", ""], sorted((env.get("machine") or {}).items()))]
    return parts


# -- helpers --------------------------------------------------------------------------------------------


def _run_data(r: RunRecord) -> dict[str, Any]:
    return {"path": r.path, "report": run_href(r), "row": r.row, **vars(r.column), "status": r.status,
            "verdict": r.verdict, "reasons": list(r.reasons), "expected": r.expected,
            "as_expected": r.as_expected, "known_issues": list(r.known_issues), "seed": r.seed,
            "started": r.started, "reproduce": r.reproduce,
            "findings": [{"checker": f.checker, "kind": f.kind, "count": f.count, "status": f.status}
                         for f in r.findings]}


def _anchor(k: KindSummary) -> str:
    return f"{k.checker}-{k.kind}".replace(" ", "-").replace("/", "-")


def _natural(name: str) -> tuple[str, int]:
    digits = "".join(c for c in name if c.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits and name[-1].isdigit() else 0)


def _pct(x: Any) -> str:
    return "" if x is None else f"{100 * float(x):.1f}%"


def _ms(x: Any) -> str:
    return "" if x is None else f"{float(x):.1f}"

