"""What the invariant rules found so far: per invariant, how often it was evaluated, its violations (the
first ``MAX_VIOLATIONS`` with the events and ops that show them, and the exact count), and notes."""

from __future__ import annotations

from collections import defaultdict

from checkers.invariants.events import brief

MAX_VIOLATIONS = 20


class Results:
    """The rules' findings; ``ok``/``bad`` are how a rule reports one evaluation."""

    def __init__(self) -> None:
        self.evaluated: dict[str, int] = defaultdict(int)
        self.violations: dict[str, list] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.notes: dict[str, str] = {}
        # invariants whose events show the tracing was there but that had nothing to judge (no commit was
        # accepted, no transaction completed): valid, with the reason, rather than "events absent"
        self.vacuous: dict[str, str] = {}
        self.stale_leader_starts: list[dict] = []  # I1: leadership taken in an epoch the controller had left

    def ok(self, inv: str, n: int = 1) -> None:
        """``inv`` held ``n`` more times."""
        self.evaluated[inv] += n

    def bad(self, inv: str, detail: str, events=(), ops=()) -> None:
        """``inv`` was violated, as ``detail`` says and the trace ``events`` and history ``ops`` show."""
        self.evaluated[inv] += 1
        self.counts[inv] += 1
        if len(self.violations[inv]) < MAX_VIOLATIONS:
            self.violations[inv].append({"detail": detail, "events": [brief(e) for e in events if e],
                                         "ops": list(ops)})
