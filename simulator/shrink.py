"""Shrinking a failing schedule: delta debugging (Zeller's ddmin) over its external events.

A candidate (a sublist of the events, same seed and options) is kept when running it breaks the same rule
again; the result is 1-minimal within the budget: removing any single remaining event makes the failure go
away (or the budget of runs ran out first, which ``ShrinkResult.complete`` says). Message delays and client choices
come from the seed, so a shorter schedule may reach the failure along a different interleaving: it is
re-run each time, never assumed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from simulator.runner import Result, run_schedule
from simulator.schedule import Schedule


@dataclass
class ShrinkResult:
    """The shortest failing schedule found, its result, how many runs it took, whether ddmin finished."""

    result: Result
    runs: int
    complete: bool


def shrink(failing: Result, max_runs: int = 400, budget_s: float | None = None) -> ShrinkResult:
    """ddmin over ``failing.schedule.events``, keeping candidates that break ``failing.finding.rule``;
    at most ``max_runs`` runs (a count keeps the outcome reproducible) and ``budget_s`` seconds if given."""
    assert failing.finding is not None
    rule = failing.finding.rule
    schedule: Schedule = failing.schedule
    best = failing
    events = list(schedule.events)
    runs = 0
    deadline = None if budget_s is None else time.monotonic() + budget_s

    def fails(candidate: list) -> Result | None:
        nonlocal runs
        runs += 1
        result = run_schedule(schedule.with_events(candidate))
        return result if result.finding is not None and result.finding.rule == rule else None

    if events:
        alone = fails([])
        if alone is not None:  # the failure needs no external event at all
            return ShrinkResult(alone, runs, True)
    n = 2
    while len(events) >= 2:
        chunk = -(-len(events) // n)
        subsets = [events[i:i + chunk] for i in range(0, len(events), chunk)]
        candidates = [(s, 2) for s in subsets] + \
            [([e for j, s in enumerate(subsets) if j != i for e in s], max(n - 1, 2)) for i in range(len(subsets))]
        for candidate, next_n in candidates if len(subsets) > 2 else candidates[:2]:
            if runs >= max_runs or (deadline is not None and time.monotonic() > deadline):
                return ShrinkResult(best, runs, False)
            result = fails(candidate)
            if result is not None:
                events, best, n = candidate, result, next_n
                break
        else:
            if n >= len(events):
                break
            n = min(len(events), n * 2)
    return ShrinkResult(best, runs, True)
