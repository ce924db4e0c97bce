"""The consumer group on a run's report: every rebalance a member went through, on the history's clock,
beside the faults in place then, and the commits per generation.

Read from the ops alone (the ``rebalance_log`` of polls and of transactions whose polls went through the
group, ``commit`` completions), so any history with group ops gets the section; a history without them
gets none. A transaction's rebalances are listed whatever became of the transaction: the member went
through them either way.
"""

from __future__ import annotations

from collections import Counter

from harness.history import completed_ops
from reports.html import esc, table
from reports.run_facts import LabelledFault

MAX_ROWS = 200


def _faults_at(labelled: list[LabelledFault], t: int) -> str:
    return ", ".join(f.label for f in labelled if f.start <= t <= f.end) or "-"


def group_section(ops: list[dict], labelled: list[LabelledFault]) -> list[str]:
    """The section's HTML parts (empty when the history has no group ops)."""
    rows = []
    commits: Counter = Counter()
    refused: Counter = Counter()
    for op in completed_ops(ops):
        if op.get("process") == "nemesis":
            continue
        if op.get("f") == "commit":
            (commits if op.get("type") == "ok" else refused)[op.get("generation")] += 1
        if op.get("f") not in ("poll", "txn"):
            continue
        for event in op.get("rebalance_log") or []:
            if isinstance(event, dict) and event.get("type") == "assigned":
                t = op.get("invoke_time") or op.get("time") or 0
                rows.append((f"{t / 1e9:.3f}", op.get("process"), event.get("generation"),
                             str(event.get("member") or "")[-12:], event.get("keys"), _faults_at(labelled, t)))
    if not rows and not commits and not refused:
        return []
    parts = ["<h2 id='groups'>Consumer group: rebalances and commits</h2>",
             f"<p class='muted'>{len(rows)} assignments in {len({r[2] for r in rows})} generations; "
             f"{sum(commits.values())} commits acknowledged, {sum(refused.values())} refused or indeterminate. "
             "A row is a member handed its partitions (the poll, or transaction, that went through the "
             "rebalance), with the faults in place when it began.</p>"]
    parts.append("<details open><summary>Rebalances</summary>" + table(
        ["t (s)", "process", "generation", "member", "keys", "faults in place"], rows[:MAX_ROWS]) + "</details>")
    if len(rows) > MAX_ROWS:
        parts.append(f"<p class='muted'>... {len(rows) - MAX_ROWS} more</p>")
    gens = sorted(set(commits) | set(refused), key=lambda g: (g is None, g if g is not None else 0))
    parts.append("<details><summary>Commits per generation</summary>" + table(
        ["generation", "acknowledged", "refused or indeterminate"],
        [(esc("unknown" if g is None else g), commits[g], refused[g]) for g in gens]) + "</details>")
    return parts
