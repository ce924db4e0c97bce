"""The fault vocabulary: which nemesis ops are faults, which heal them, and when a fault was in place.

Fault coverage (``nemesis.coverage``), the shaded bands of the run report (``reports.run_report``) and
Spark's per-fault statistics (``spark_analysis.intervals``) all read fault intervals from here, so the
three cannot disagree about when a run was under a fault.

Ops. Nemesis ops have process ``"nemesis"`` and come one at a time (the nemesis is one logical process):
each invocation is followed by its completion. The vocabulary is what kraftcheck's nemeses do:

- **lasting faults** stay in place until an op heals them: ``kill``, ``stop``, ``pause``,
  ``start-partition``, ``bump-clock``, ``skew-clock``, and the targeted ``strike`` (a kill -9 or pause
  fired by a trace event) and ``start-cut`` (a controller-only or one-way leader/follower partition);
- **faults within their op** are over when their op completes: ``power-loss`` (kill -9, drop unsynced
  data, restart, all inside the op), ``lose-unsynced``, ``strobe-clock`` (flips the clock for its
  duration and leaves it at zero), the admin ops (the request and the state read back), and the targeted
  ``crash-lossy`` (kill -9, drop unsynced data, stay down, restart), ``churn`` (a membership change
  sequence with its kills and partitions healed inside the op) and ``strand`` (a follower cut off until it
  leaves the ISR, every other replica stopped, the follower left alone, the others restarted);
- **heals** end the faults listed in ``HEALED_BY``: ``start`` (killed and stopped nodes), ``resume``,
  ``stop-partition``, ``reset-clock``, ``end-strike``, ``stop-cut``, and the final ``heal``, which ends
  every fault.

Named mixes. ``all`` is every family; ``targeted`` (``TARGETED``) is the mix tuned for bug finding:
faults aimed at the narrow windows where the replication rules matter (see ``nemesis.targeted``).

An op outside the vocabulary is neither a fault nor a heal (coverage does not count it either).

When a fault is in place. An interval is the time during which a fault *may* have been in place, so
that what is outside every interval is certainly healthy:

- it starts at the fault's **invocation**. Every nemesis acts right after the invocation is recorded
  (the signal sent, the rules installed, the offset file written, the unsynced data dropped) and records
  the completion only once it has gathered its evidence (a connection refused across the cut, the offset
  measured inside the node, the node restarted), which takes up to seconds. Client ops in that window
  already run under the fault;
- it ends at the **ok completion** of an op that heals it: until then the heal is not proven. A heal
  that failed, or ended ``info`` (it may not have happened), ends nothing;
- a fault within its op ends at its own completion; a fault whose op was never completed, or never
  healed, lasts to the end of the history;
- a fault whose completion is ``fail`` certainly did not happen and has no interval; ``info`` (it may
  have happened) and ``ok`` count, whatever the evidence says (an ``ok`` fault without evidence is not
  *proven*, which is coverage's business, but it may still have been in place).

``recoveries`` are the ok heal completions that ended at least one fault: the moments from which Spark
measures the time a run takes to recover.

A run's **fault mix** (``mix_name``) is the name under which runs are grouped across a store: the Spark
aggregation's tables and the published matrix's columns use the same one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

FAMILY_FS: dict[str, frozenset[str]] = {
    "kill": frozenset({"kill"}),
    "stop": frozenset({"stop"}),
    "pause": frozenset({"pause"}),
    "partition": frozenset({"start-partition"}),
    "clock": frozenset({"bump-clock", "strobe-clock", "skew-clock"}),
    "disk": frozenset({"power-loss", "lose-unsynced"}),
    "admin": frozenset({"reassign", "cancel-reassignment", "elect-preferred", "elect-unclean",
                        "set-reassignment-mode"}),
    "crash-lossy": frozenset({"crash-lossy"}),
    "strike": frozenset({"strike"}),
    "churn": frozenset({"churn"}),
    "cut": frozenset({"start-cut"}),
    "strand": frozenset({"strand"}),
}
"""Fault family (the names ``--nemesis`` takes) -> the fault ops of that family."""

F_FAMILY: dict[str, str] = {f: family for family, fs in FAMILY_FS.items() for f in fs}
"""Fault op -> its family."""

FAULT_FS: frozenset[str] = frozenset(F_FAMILY)

TARGETED: tuple[str, ...] = ("crash-lossy", "strike", "churn", "cut", "strand")
"""The families ``--nemesis targeted`` stands for (``all`` includes them)."""

MIXES: dict[str, tuple[str, ...]] = {"all": tuple(FAMILY_FS), "targeted": TARGETED}
"""Names ``--nemesis`` takes that stand for several families."""

WITHIN_OP_FS: frozenset[str] = frozenset({"power-loss", "lose-unsynced", "strobe-clock", *FAMILY_FS["admin"],
                                          "crash-lossy", "churn", "strand"})
"""Faults that are over when their own op completes."""

LASTING_FS: frozenset[str] = FAULT_FS - WITHIN_OP_FS

HEALED_BY: dict[str, frozenset[str]] = {
    "start": frozenset({"kill", "stop"}),
    "resume": frozenset({"pause"}),
    "stop-partition": frozenset({"start-partition"}),
    "reset-clock": frozenset({"bump-clock", "skew-clock"}),
    "end-strike": frozenset({"strike"}),
    "stop-cut": frozenset({"start-cut"}),
    "heal": LASTING_FS,
}
"""Heal op -> the lasting faults it ends."""

HEAL_FS: frozenset[str] = frozenset(HEALED_BY)


class FaultInterval(NamedTuple):
    """``[start, end)`` in history time (ns since the run started) during which fault ``f`` may have been
    in place."""

    start: int
    end: int
    f: str


class FaultTimeline(NamedTuple):
    """A run's fault intervals (sorted by start) and its recoveries (ok heal completions that ended a
    fault)."""

    intervals: list[FaultInterval]
    recoveries: list[int]


def nemesis_ops(ops: Iterable[dict]) -> Iterator[dict]:
    """The nemesis ops of a history, in history order."""
    return (op for op in ops if op.get("process") == "nemesis")


def fault_timeline(ops: Iterable[dict], end_of_history: int) -> FaultTimeline:
    """The fault intervals and recoveries of a run (see the module docstring for the rule).

    ``ops`` are the run's nemesis ops in history order (``nemesis_ops`` picks them from a history); each
    needs ``type``, ``f`` and ``time``.
    ``end_of_history`` (the time of the history's last op) ends the faults that were never healed.
    """
    intervals: list[FaultInterval] = []
    recoveries: list[int] = []
    in_place: list[tuple[int, str]] = []  # (start, f) of lasting faults, in the order they began
    invoked: dict[str, list[int]] = {}  # f -> invocation times not yet completed
    for op in ops:
        f, time = op["f"], op["time"]
        if f not in FAULT_FS and f not in HEAL_FS:
            continue
        if op["type"] == "invoke":
            invoked.setdefault(f, []).append(time)
            continue
        pending = invoked.get(f)
        started = pending.pop() if pending else time
        if f in HEAL_FS:
            if op["type"] != "ok":
                continue
            ended = [(start, name) for start, name in in_place if name in HEALED_BY[f]]
            if ended:
                intervals.extend(FaultInterval(start, max(start, time), name) for start, name in ended)
                in_place = [entry for entry in in_place if entry[1] not in HEALED_BY[f]]
                recoveries.append(time)
        elif op["type"] == "fail":
            continue
        elif f in WITHIN_OP_FS:
            intervals.append(FaultInterval(started, time, f))
        else:
            in_place.append((started, f))
    for f, times in invoked.items():
        if f in FAULT_FS:  # invoked, never completed: it may have taken effect
            in_place.extend((start, f) for start in times)
    intervals.extend(FaultInterval(start, max(start, end_of_history), name) for start, name in in_place)
    return FaultTimeline(sorted(intervals), recoveries)


def mix_name(nemesis: Any) -> str:
    """A run's fault mix from its spec's ``nemesis`` (a list or a comma-separated string): the names,
    sorted and joined by ``+``; ``none`` without faults."""
    if isinstance(nemesis, str):
        names = nemesis.split(",")
    elif isinstance(nemesis, list | tuple):
        names = [n if isinstance(n, str) else json.dumps(n, sort_keys=True) for n in nemesis]
    else:
        names = []
    names = sorted({n.strip() for n in names if n and n.strip() and n.strip() != "none"})
    return "+".join(names) if names else "none"


def end_of(ops: Iterable[dict[str, Any]]) -> int:
    """The time of the last op of a history (0 for an empty one): where unhealed faults end."""
    return max((op["time"] for op in ops), default=0)
