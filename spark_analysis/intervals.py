"""Nemesis intervals: when a run was under a fault, derived from the nemesis ops of its history.

The rule (pure Python, used by Spark per run through ``applyInPandas`` and directly by tests):

- Nemesis ops are those with process ``"nemesis"``; they are paired invoke -> completion in history order
  (the nemesis is one logical process). A completion of type ``fail`` means the op certainly did not take
  effect and is ignored; ``ok`` and ``info`` (may have taken effect) count.
- **Healing ops** end faults: ``f`` is ``heal`` or starts with ``heal``, ``stop-`` or ``reset-``
  (``stop-partition``, ``reset-clock``), or is one of ``start``, ``restart``, ``resume``, ``cont``
  (the names of ``nemesis/coverage.py``). A healing op's completion ends **every** open fault: the
  schedules of ``nemesis/schedule.py`` keep at most one fault active at a time, and the final ``heal``
  heals everything.
- **Instantaneous faults** (``power-loss``, ``lose-unsynced`` and the admin ops ``reassign``,
  ``cancel-reassignment``, ``elect-preferred``, ``elect-unclean``, ``set-reassignment-mode``) have no
  healing op: their interval is the op's own span, from invocation to completion.
- **Every other nemesis op is a lasting fault** (``kill``, ``stop``, ``pause``, ``start-partition``,
  ``bump-clock``, ...): its interval starts at its completion and ends at the next healing completion, or
  at the end of the history (the time of its last op) when it was never healed.

Overlapping intervals are merged, so a moment is either "fault" or "healthy". Times are the history's
``time`` (ns since the run started). ``recoveries`` lists, for each healing completion that leaves no
fault open, the heal time; the time to recover is measured from there (see ``spark_analysis.aggregate``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

HEAL_PREFIXES = ("heal", "stop-", "reset-")
HEAL_FS = frozenset({"start", "restart", "resume", "cont"})
INSTANT_FS = frozenset({"power-loss", "lose-unsynced", "reassign", "cancel-reassignment",
                        "elect-preferred", "elect-unclean", "set-reassignment-mode"})


def is_heal(f: str) -> bool:
    """True when a nemesis op named ``f`` ends faults rather than starting one."""
    return f in HEAL_FS or f.startswith(HEAL_PREFIXES)


@dataclass(frozen=True)
class Interval:
    """A span ``[start, end)`` of history time under at least one fault; ``fs`` names the faults."""

    start: int
    end: int
    fs: str


def fault_intervals(nemesis_ops: Iterable[dict], end_of_history: int) -> tuple[list[Interval], list[int]]:
    """Return ``(merged fault intervals, heal times)`` from a run's nemesis ops in history order.

    ``nemesis_ops`` need ``type``, ``f`` and ``time``; ``end_of_history`` closes faults never healed.
    Heal times are the completions of healing ops that closed at least one open fault.
    """
    raw: list[tuple[int, int, str]] = []
    open_faults: list[tuple[int, str]] = []
    heals: list[int] = []
    pending: dict | None = None
    for op in nemesis_ops:
        if op["type"] == "invoke":
            pending = op
            continue
        invoke, pending = pending, None
        if op["type"] == "fail":
            continue
        f = op["f"]
        if is_heal(f):
            if open_faults:
                for start, name in open_faults:
                    raw.append((start, max(start, op["time"]), name))
                open_faults = []
                heals.append(op["time"])
        elif f in INSTANT_FS:
            start = invoke["time"] if invoke is not None and invoke["f"] == f else op["time"]
            raw.append((start, op["time"], f))
        else:
            open_faults.append((op["time"], f))
    for start, name in open_faults:
        raw.append((start, max(start, end_of_history), name))
    return merge(raw), heals


def merge(raw: list[tuple[int, int, str]]) -> list[Interval]:
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
    import bisect

    i = bisect.bisect_right([iv.start for iv in intervals], t) - 1
    return "fault" if i >= 0 and t < intervals[i].end else "healthy"
