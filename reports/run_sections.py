"""The sections of a run report, each a function from the run's stored data to a list of HTML strings.

``reports.run_report.render`` puts them in reading order: verdict and why, the run (date, duration, store
path, files, replay command), the scenario block, configuration, checkers, the guarantee profile, fault
coverage, the faults with their effect on availability, op counts and latency quantiles, the plots, the
partition timeline, client errors by Kafka error code, the linearizability counterexample, the anomalies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from harness.spec import injected_bug_label
from harness.verdict import word_of
from reports.findings import NON_LINEARIZABLE, Finding, op_refs
from reports.html import badge, esc, png_img, table
from reports.ops_html import example_rows, op_html
from reports.plots import latency_png, partition_timeline_png, throughput_png
from reports.reproduce import reproduction
from reports.run_facts import ClientPair, FaultImpact, LabelledFault, client_errors, latency_quantiles
from reports.trace_timeline import PartitionTimeline, changes

MAX_ROWS = 50
MAX_OPS_SHOWN = 6
MAX_TIMELINE_ROWS = 300
CONFIG_KEYS = ("seed", "backend", "variant", "acks", "min_isr", "replication_factor", "brokers", "keys",
               "unclean_leader_election", "idempotence", "flush_messages", "flush_ms", "nemesis",
               "nemesis_interval_s", "time_limit_s", "rate", "concurrency", "inject_bug", "git_commit",
               "kraftcheck_version", "image")


def run_info(spec: dict, end_ns: int, run_dir: str | None, files: list[str]) -> list[str]:
    """Date, duration, store path, links to the run's files and the replay command."""
    rows: list[tuple[str, str]] = []
    created = spec.get("created_utc")
    if created:
        rows.append(("date", esc(_readable_date(created))))
    rows.append(("duration", esc(f"{end_ns / 1e9:.1f} s of history (main phase "
                                  f"{spec.get('time_limit_s', '?')} s, then the final phase)")))
    if run_dir:
        rows.append(("store path", f"<code>{esc(run_dir)}</code>"))
    if files:
        rows.append(("files", " ".join(f"<a href='{esc(f)}'>{esc(f)}</a>" for f in files)))
    if spec:
        rows.append(("reproduce", f"<code>{esc(reproduction(spec, run_dir))}</code>"))
    return ["<h2 id='run'>Run</h2>", table(["", ""], rows, raw=[1])]


def configuration(spec: dict) -> list[str]:
    """The spec keys a reader needs to judge the run."""
    rows = [(key, injected_bug_label(spec[key]) if key == "inject_bug" else spec[key])
            for key in CONFIG_KEYS if key in spec]
    return ["<h2>Configuration</h2>", table(["", ""], rows)]


def checkers(results: dict) -> list[str]:
    """Each checker's verdict, and what the verdict does not cover."""
    parts = []
    found = results.get("checkers") or {}
    if found:
        rows = []
        for name, result in sorted(found.items()):
            value = result.get("valid") if isinstance(result, dict) else result
            counted = "" if not isinstance(result, dict) or result.get("counted", True) else " (not counted)"
            rows.append((name, badge(word_of(value)) + esc(counted)))
        parts += ["<h2>Checkers</h2>", table(["checker", "verdict"], rows, raw=[1])]
    if results.get("not_checked"):
        parts.append("<h2>Not checked</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in results["not_checked"])
                     + "</ul>")
    return parts


def profile(results: dict, found: list[Finding]) -> list[str]:
    """The guarantee profile: per anomaly kind, whether this configuration forbids or allows it, why, and
    how often this run showed it."""
    prof = results.get("profile") or ((results.get("checkers") or {}).get("queue") or {}).get("profile") or {}
    statuses, reasons = prof.get("statuses") or {}, prof.get("reasons") or {}
    if not statuses:
        return []
    seen = {f.kind: f.count for f in found if f.checker == "queue"}
    order = {"forbidden": 0, "known-issue": 1, "expected": 2, "allowed": 3, "unknown": 4}
    rows = [(kind, status, reasons.get(kind, ""), seen.get(kind, 0) or "")
            for kind, status in sorted(statuses.items(), key=lambda kv: (-(kv[0] in seen), order.get(kv[1], 5),
                                                                          kv[0]))]
    inputs = prof.get("inputs") or {}
    parts = ["<h2 id='profile'>Guarantee profile</h2>",
             "<p class='muted'>What this run's configuration and the faults that ran promise, per anomaly "
             "kind of the queue checker: <b>forbidden</b> makes the run invalid, <b>allowed</b> is reported "
             "only, <b>known-issue</b> / <b>expected</b> is a documented weakness of the variant.</p>"]
    if inputs:
        parts.append(f"<p class='muted'>Decided from: {esc(inputs)}</p>")
    parts.append(table(["anomaly kind", "status", "why", "seen in this run"], rows, attrs="id='profile-table'"))
    return parts


def coverage(results: dict) -> list[str]:
    """Fault coverage: per family requested, attempted, proven effective, failed, time in place."""
    table_rows = results.get("coverage") or {}
    if not table_rows:
        return []
    rows = [(family, row.get("requested"), row.get("attempted"), row.get("effective"), row.get("failed"),
             row.get("in_place_s", "")) for family, row in sorted(table_rows.items())]
    return ["<h2>Fault coverage</h2>",
            table(["family", "requested", "attempted", "effective", "failed", "in place (s)"], rows)]


def faults(impacts: list[FaultImpact]) -> list[str]:
    """Each fault: when, what was done to which node, and the clients' view of it."""
    if not impacts:
        return ["<h2 id='faults'>Faults</h2><p>No fault ran.</p>"]
    rows = []
    for i, imp in enumerate(impacts, start=1):
        fault = imp.fault
        rows.append((i, f"{fault.start / 1e9:.2f}", f"{fault.end / 1e9:.2f}", fault.label,
                     "yes" if fault.healed else "within its op" if fault.end > fault.start else "no",
                     imp.ok_during, f"{imp.unavailable_s:.2f}",
                     "no ok op followed" if imp.recovery_s is None else f"{imp.recovery_s:.2f}"))
    return ["<h2 id='faults'>Faults</h2>",
            "<p class='muted'>Unavailable: the longest stretch without an ok client completion while the fault "
            "was in place. Recovery: from the end of the fault to the completion of the first ok client op "
            "invoked after it (final reads included).</p>",
            table(["#", "from (s)", "to (s)", "what was done", "healed", "ok ops during", "unavailable (s)",
                   "recovery (s)"], rows, attrs="id='faults-table'")]


def operations(op_counts: dict, pairs: list[ClientPair], malformed: int) -> list[str]:
    """Completions by op type and outcome, and the latency quantiles of the ok ops."""
    rows = [(f, c["ok"], c["fail"], c["info"]) for f, c in sorted(op_counts.items())]
    parts = ["<h2>Operations</h2>", table(["f", "ok", "fail", "info"], rows)]
    if malformed:
        parts.append(f"<p>{malformed} malformed history line(s) were skipped.</p>")
    quantiles = latency_quantiles(pairs)
    if quantiles:
        parts.append("<h3>Latency quantiles of ok ops (ms, main phase)</h3>")
        parts.append(table(["f", "ok", "fail", "info", "p50", "p90", "p99", "max"],
                           [(q["f"], q["ok"], q["fail"], q["info"], *(_ms(q[k]) for k in ("p50", "p90", "p99", "max")))
                            for q in quantiles], attrs="id='latency-quantiles'"))
    return parts


def plots(pairs: list[ClientPair], labelled: list[LabelledFault]) -> list[str]:
    """Throughput and latency over time, with the faults shaded and labelled."""
    return ["<h2 id='throughput'>Throughput</h2>",
            png_img(throughput_png(pairs, labelled), "throughput", "No completed client ops."),
            "<h2 id='latency'>Latency over time</h2>",
            png_img(latency_png(pairs, labelled), "latency", "No client ops.")]


def timeline(timelines: list[PartitionTimeline], labelled: list[LabelledFault], end_ns: int,
             has_trace: bool) -> list[str]:
    """The per-partition timeline plot and, folded, the committed states as a table."""
    parts = ["<h2 id='partitions'>Partition timeline</h2>"]
    if not timelines:
        parts.append("<p class='muted'>" + ("No controller partition state in trace.jsonl." if has_trace else
                                            "No trace.jsonl in this run.") + "</p>")
        return parts
    parts.append("<p class='muted'>From the controller's committed states in trace.jsonl: per broker when it "
                 "was a replica, in the ISR or the ELR, and the leader; the leader's high watermark; leader "
                 "epochs where they change.</p>")
    parts.append(png_img(partition_timeline_png(timelines, labelled, end_ns), "partition timeline",
                         "Nothing to draw."))
    for tl in timelines:
        rows = [(f"{c['time'] / 1e9:.3f}", c["leader"], c["leader_epoch"], c["partition_epoch"], c["isr"], c["elr"],
                 c["last_known_elr"], c["hwm"]) for c in changes(tl)]
        more = (f"<p class='muted'>... {len(rows) - MAX_TIMELINE_ROWS} more states</p>"
                if len(rows) > MAX_TIMELINE_ROWS else "")
        parts.append(f"<details><summary>{esc(tl.topic)}-{tl.partition}: {len(rows)} committed states</summary>"
                     + table(["t (s)", "leader", "LE", "PE", "ISR", "ELR", "LKELR", "leader HWM"],
                             rows[:MAX_TIMELINE_ROWS]) + more + "</details>")
    return parts


def errors(ops: list[dict]) -> list[str]:
    """Failed and indeterminate client ops by Kafka error code."""
    groups = client_errors(ops)
    parts = ["<h2 id='errors'>Client errors by Kafka error code</h2>"]
    if not groups:
        parts.append("<p>None: every client op completed ok.</p>")
        return parts
    parts.append(table(["code", "error", "count", "by op and outcome", "example"],
                       [(g["code"], g["name"], g["count"], ", ".join(f"{k}: {n}" for k, n in g["by"].most_common()),
                         g["example"]) for g in groups], attrs="id='errors-table'"))
    return parts


def counterexample(found: list[Finding], by_index: dict[int, dict]) -> list[str]:
    """Each non-linearizable key: how far the search got, the op it could not place, the ops still open
    there and the model states it could have been in."""
    linear = [f for f in found if f.checker == "linear" and f.kind == NON_LINEARIZABLE]
    if not linear:
        return []
    parts = ["<h2 id='counterexample'>Linearizability counterexample</h2>"]
    for key in linear[0].examples:
        stuck = [r for r in key.get("stuck_ops") or [] if isinstance(r, int)]
        parts.append(f"<h3>key {esc(key.get('key'))}: {key.get('linearized', '?')} of {key.get('ops', '?')} ops "
                     "linearized, then no order fits</h3>")
        rows = []
        for i, ref in enumerate(dict.fromkeys(stuck)):
            op = by_index.get(ref)
            role = "stuck: completed before any order could place it" if i == 0 else "still open there"
            rows.append((role, op_html(op) if op else f"op {ref} (not in the stored history)"))
        if rows:
            parts.append(table(["", "op"], rows, raw=[1]))
        states = key.get("last_states")
        if states:
            parts.append("<p>Last possible states of the model there:</p><ul>"
                         + "".join(f"<li><code>{esc(s)}</code></li>" for s in states) + "</ul>")
    return parts


def anomalies_section(found: list[Finding], other: list[tuple[str, str, list[Any]]],
                      by_index: dict[int, dict]) -> list[str]:
    """Every anomaly the checkers reported, with its profile status and why, next to the history ops it
    names (long values shortened, the named values highlighted); ``other``: findings of checkers outside
    ``reports.findings`` as ``(checker, path, entries)``."""
    parts = ["<h2 id='anomalies'>Anomalies</h2>"]
    if not found and not other:
        parts.append("<p>None reported.</p>")
    groups = [(f"{f.checker}: {f.kind} ({f.count}, {f.status})", f.reason, list(f.examples), f.count)
              for f in found]
    groups += [(f"{checker}: {path} ({len(entries)})", "", entries, len(entries)) for checker, path, entries in other]
    for heading, reason, entries, count in groups:
        parts.append(f"<h3>{esc(heading)}</h3>")
        if reason:
            parts.append(f"<p class='muted'>{esc(reason)}</p>")
        for entry in entries[:MAX_ROWS]:
            refs = list(dict.fromkeys(op_refs(entry)))[:MAX_OPS_SHOWN]
            parts.append(table(["", ""], example_rows(entry, by_index, refs), raw=[0, 1], attrs="class='finding'"))
        if count > min(len(entries), MAX_ROWS):
            parts.append(f"<p class='muted'>{count - min(len(entries), MAX_ROWS)} more not shown "
                         "(results.json keeps the checker's examples)</p>")
    return parts


def _readable_date(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    except ValueError:
        return stamp


def _ms(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}"

