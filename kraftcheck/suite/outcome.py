"""A suite's judgement: each run's outcome, whether it is the expected one, the exit code, the summary (pure).

Outcomes of a run (``OUTCOMES``):

- ``valid``: the checkers found nothing and, for a scenario, its expectation was met;
- ``expected-failure``: a documented known issue showed up and was explained, as expected for that
  variant (a scenario reproducing it, whose judge labels it; or a randomized run whose checkers report
  an anomaly or invariant break the guarantee profile classifies as a known issue);
- ``invalid``: a forbidden anomaly or invariant violation;
- ``unknown``: the run could not be judged (a fault that never took effect, an incomplete final read, a
  scenario whose reproduction did not happen);
- ``harness-error``: the harness could not complete the run (its exit code is that of a harness error).

A cell *matches* when its outcome is one its expectation accepts. The suite's exit code comes from the
cells that do not match: the code of invalid when one is ``invalid`` or shows a failure nobody expected,
else that of a harness error when one is, else that of unknown; the code of valid when every cell matches.
The verdict words and the exit codes are those of ``harness.verdict`` (``EXIT_CODES``, the one table every
command uses).
"""

from __future__ import annotations

from typing import Any

from harness.verdict import EXIT_HARNESS_ERROR, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, word_of

OUTCOMES = ("valid", "expected-failure", "invalid", "unknown", "harness-error")
EXIT_MATCHED = EXIT_VALID  # every cell showed an outcome its expectation accepts


def known_issue_seen(results: dict[str, Any]) -> bool:
    """Whether the checkers report a documented known issue in a run they judged valid (the guarantee
    profile's ``known-issue``/``expected`` statuses, which do not invalidate a run)."""
    checkers = results.get("checkers") or {}
    queue = checkers.get("queue") or {}
    if queue.get("known_issues") or queue.get("expected"):
        return True
    invariants = (checkers.get("invariants") or {}).get("invariants") or {}
    return any(e.get("valid") is False and e.get("status") not in (None, "forbidden") for e in invariants.values())


def outcome_of(results: dict[str, Any], exit_code: int) -> str:
    """The outcome word of one finished run (module docstring)."""
    if exit_code == EXIT_HARNESS_ERROR or results.get("harness_error"):
        return "harness-error"
    valid = results.get("valid")
    if valid is False:
        return "invalid"
    if valid is not True:
        return "unknown"
    scenario = results.get("scenario") or {}
    if scenario.get("label") or known_issue_seen(results):
        return "expected-failure"
    return "valid"


def word(outcome: str) -> str:
    """How an outcome is printed: the verdict words of ``harness.verdict`` for the three verdicts,
    "expected failure" and "harness error" for the other two."""
    if outcome in ("valid", "invalid", "unknown"):
        return word_of({"valid": True, "invalid": False}.get(outcome, "unknown"))
    return outcome.replace("-", " ")


def exit_code(results: list[tuple[str, bool]]) -> int:
    """The suite's exit code from ``(outcome, matched)`` pairs (module docstring)."""
    off = [outcome for outcome, matched in results if not matched]
    if not off:
        return EXIT_MATCHED
    if any(o in ("invalid", "expected-failure") for o in off):
        return EXIT_INVALID
    if "harness-error" in off:
        return EXIT_HARNESS_ERROR
    return EXIT_UNKNOWN


def summary_rows(cells: list[dict[str, Any]]) -> list[list[str]]:
    """The summary table's rows (header first) from suite.json cell entries."""
    rows = [["#", "scenario / workload", "system", "faults", "backend", "outcome", "expected", "", "s", "run"]]
    for i, c in enumerate(cells, start=1):
        outcome = c.get("outcome")
        rows.append([str(i), c["name"], c.get("system") or c["variant"], c["nemesis_mix"], c["backend"],
                     word(outcome) if outcome else "not run", word(c["expected"]),
                     "ok" if c.get("matched") else ("--" if outcome is None else "NO"),
                     f"{c['duration_s']:.0f}" if c.get("duration_s") is not None else "",
                     c.get("run_dir") or ""])
    return rows


def render_table(rows: list[list[str]]) -> str:
    """Rows as aligned plain text (the last column unpadded)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[i].ljust(widths[i]) for i in range(len(row) - 1)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths[:-1]) + "  " + "-" * max(3, widths[-1]))
    return "\n".join(lines)


def tally(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts for suite.json's ``summary``: cells, run, matched, by outcome, and the exit code."""
    run = [c for c in cells if c.get("outcome")]
    by_outcome = {o: sum(1 for c in run if c["outcome"] == o) for o in OUTCOMES}
    code = exit_code([(c["outcome"], bool(c.get("matched"))) for c in run])
    if len(run) < len(cells) and code == EXIT_MATCHED:
        code = EXIT_UNKNOWN  # an interrupted suite has not shown what the missing cells would
    return {"cells": len(cells), "run": len(run), "matched": sum(1 for c in run if c.get("matched")),
            "by_outcome": by_outcome, "exit_code": code}
