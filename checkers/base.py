"""The checker protocol and composition (docs/interfaces.md).

A checker is a pure function of (spec, history, traces). Verdicts compose by priority:
``False`` (invalid) beats ``"unknown"`` beats ``True`` (valid), the rule of ``harness.verdict``,
which also turns them into a run's final verdict. A checker that raises yields ``"unknown"`` with the
error, never a crash of the whole analysis.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from harness.checked_spec import CheckedSpec
from harness.verdict import combine

Verdict = bool | str  # True, False or "unknown"


@runtime_checkable
class Checker(Protocol):
    """Decides one property of a history."""

    name: str

    def check(self, spec: CheckedSpec, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Return at least ``{"valid": True | False | "unknown"}`` plus details naming the proving ops."""


def merge_valid(verdicts: list[Verdict]) -> Verdict:
    """Combine verdicts: any False wins, then any "unknown", else True (an empty list is True)."""
    return combine(verdicts)


def run_checker(checker: Checker, spec: CheckedSpec | Mapping | None, history: list[dict], traces: list[dict]) -> dict[str, Any]:
    """Run one checker, turning an exception into an ``unknown`` result that carries the error. The checker
    is handed the checkers' view of the spec (``harness.checked_spec``); a spec key of the wrong type is a
    ``SpecError`` here, not a checker's unknown."""
    spec = CheckedSpec.of(spec)
    try:
        result = checker.check(spec, history, traces)
    except Exception as exc:  # a broken checker must not take the whole analysis down
        return {"valid": "unknown", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}
    if not isinstance(result, dict) or "valid" not in result:
        return {"valid": "unknown", "error": f"checker {checker.name} returned {result!r}"}
    return result


def compose(checkers: list[Checker], spec: CheckedSpec | Mapping | None, history: list[dict], traces: list[dict]) -> dict[str, Any]:
    """Run every checker and merge: ``{"valid": ..., "checkers": {name: result}}``."""
    results = {c.name: run_checker(c, spec, history, traces) for c in checkers}
    return {"valid": merge_valid([r["valid"] for r in results.values()]), "checkers": results}
