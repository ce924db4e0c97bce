"""Nemesis intervals: when a run was under a fault, derived from the nemesis ops of its history.

The rule is ``harness.faults``'s (the one fault coverage and the run report's bands use): a fault is
in place from its invocation until the ok completion of an op that heals it, a fault within its own op
(power loss, a clock strobe, an admin op) for that op's span, a fault never healed until the end of the
history; a fault whose op failed has no interval. Spark applies it per run through ``applyInPandas``
(``spark_analysis.aggregate``); tests call it directly.

For the statistics a moment is either "fault" or "healthy", so the intervals of a run are merged here:
overlapping or touching intervals become one, named by its faults (``kill+power-loss``). Times are the
history's ``time`` (ns since the run started). The heal times are the recoveries of
``harness.faults``: ok heal completions that ended at least one fault; the time to recover is
measured from there (see ``spark_analysis.aggregate``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from harness.faults import fault_timeline


@dataclass(frozen=True)
class Interval:
    """A span ``[start, end)`` of history time under at least one fault; ``fs`` names the faults."""

    start: int
    end: int
    fs: str


def fault_intervals(nemesis_ops: Iterable[dict], end_of_history: int) -> tuple[list[Interval], list[int]]:
    """Return ``(merged fault intervals, heal times)`` from a run's nemesis ops in history order.

    ``nemesis_ops`` need ``type``, ``f`` and ``time``; ``end_of_history`` ends the faults never healed.
    """
    timeline = fault_timeline(nemesis_ops, end_of_history)
    return merge(timeline.intervals), timeline.recoveries


def merge(raw: Iterable[tuple[int, int, str]]) -> list[Interval]:
    """Merge overlapping or touching spans; the merged span names its faults in first-seen order."""
    out: list[Interval] = []
    cur: list | None = None
    for start, end, name in sorted(raw, key=lambda t: (t[0], t[1])):
        if cur is not None and start <= cur[1]:
            cur[1] = max(cur[1], end)
            if name not in cur[2]:
                cur[2].append(name)
            continue
        if cur is not None:
            out.append(Interval(cur[0], cur[1], "+".join(cur[2])))
        cur = [start, end, [name]]
    if cur is not None:
        out.append(Interval(cur[0], cur[1], "+".join(cur[2])))
    return out


def state_at(intervals: list[Interval], t: int) -> str:
    """``"fault"`` if ``t`` falls in one of the (sorted, merged) intervals, else ``"healthy"``."""
    i = bisect.bisect_right([iv.start for iv in intervals], t) - 1
    return "fault" if i >= 0 and t < intervals[i].end else "healthy"
