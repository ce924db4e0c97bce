"""The fault families and their vocabulary: one table, which ops are faults, which heal them, and when a
fault was in place.

The family table. ``FAULT_FAMILIES`` has one row (``FaultFamily``) per family, the names ``--nemesis``
takes: the ops that start it, the op that heals it (None when every start is over within its op), which
starts are over within their op, the nemesis member that implements it (``nemesis.registry`` maps member
names to classes and family names to start drawers), its weight in the schedule's later rounds, how long
its ops typically take (measured; ``harness.fault_time`` reads it), whether it is part of ``targeted``,
whether it needs root on the local backend, what kind of fault it is in the vocabulary systems under test
declare guarantees in (``kind``) and what it needs from the system beyond the host (``needs``: traces, an
admin operation, a controller, follower replicas). Everything else here is derived from the table: ``FAMILY_FS``,
``F_FAMILY``, ``WITHIN_OP_FS``, ``LASTING_FS``, ``HEALED_BY``, the mixes, ``NEMESIS_NAMES`` and the one parser
of ``--nemesis`` (``parse_nemesis``; ``requested_families`` expands the mixes), which the spec, the
registry and coverage all use.

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
  sequence with its kills and partitions healed inside the op), ``strand`` (a follower cut off until it
  leaves the ISR, every other replica stopped, the follower left alone, the others restarted) and
  ``episodes`` (the scripted episodes that open the windows of Kafka's historical bugs, each healed before
  the next);
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
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class FaultFamily:
    """One row of the family table: a name ``--nemesis`` takes and every fact about it (module docstring)."""

    name: str
    starts: tuple[str, ...]
    """The fault ops that start it (the schedule's drawer picks one; coverage counts each)."""
    heal: str | None
    """The op that ends it (its turn's second step); None when every start is over when its op completes."""
    within_op: tuple[str, ...]
    """The starts that are over when their own op completes (all of them when ``heal`` is None)."""
    member: str
    """The nemesis member that implements it (``nemesis.registry.MEMBERS`` maps it to a module and class)."""
    weight: float
    """How likely it is drawn into a round after the first, relative to the others."""
    ops_s: float
    """How long its ops (start and heal) typically take to complete, beyond the schedule's waits: the median
    of the turns measured in real docker runs, rounded up to a whole second (docs/benchmarks.md, "Fault
    families: time per turn")."""
    targeted: bool = False
    """Part of the ``targeted`` mix."""
    local_root: bool = False
    """Needs root on the local backend (iptables rules, the faketime setup, FUSE mounts)."""
    kind: str = "crash"
    """What kind of fault it is, in the vocabulary in which a system under test declares what acknowledged
    writes survive (``harness.sut.GUARANTEES``: crash, power-loss, partition, pause, clock, admin)."""
    needs: tuple[str, ...] = ()
    """What it needs from the system under test beyond the host's abilities (``harness.clusters``):
    ``traces`` (it fires on a trace event), ``admin:<op>``, ``role:controller``, ``replication`` (an ISR)."""

    def __post_init__(self) -> None:
        if not set(self.within_op) <= set(self.starts):
            raise ValueError(f"{self.name}: within_op {self.within_op} not among its starts {self.starts}")
        if self.heal is None and set(self.within_op) != set(self.starts):
            raise ValueError(f"{self.name}: without a heal op every start must be within its op")
        if self.heal is not None and set(self.within_op) == set(self.starts):
            raise ValueError(f"{self.name}: a heal op but nothing that lasts")
        if not self.weight > 0 or self.ops_s < 0:
            raise ValueError(f"{self.name}: the weight must be positive and ops_s not negative")

    @property
    def lasting(self) -> frozenset[str]:
        """The starts that stay in place until ``heal`` (or the final heal) ends them."""
        return frozenset(self.starts) - frozenset(self.within_op)

    @property
    def steps(self) -> int:
        """The schedule's ops per turn: the start, and the heal when there is one."""
        return 1 if self.heal is None else 2


def _row(name: str, starts: tuple[str, ...], heal: str | None, member: str, weight: float, ops_s: float,
         *, kind: str, within_op: tuple[str, ...] | None = None, targeted: bool = False,
         local_root: bool = False, needs: tuple[str, ...] = ()) -> FaultFamily:
    # Without a heal op every start is within its op; with one, none is unless named.
    within = within_op if within_op is not None else (starts if heal is None else ())
    return FaultFamily(name, starts, heal, within, member, weight, ops_s, targeted, local_root, kind, needs)


_ADMIN_FS = ("reassign", "cancel-reassignment", "elect-preferred", "elect-unclean", "set-reassignment-mode")
_CLOCK_FS = ("bump-clock", "strobe-clock", "skew-clock")

FAULT_FAMILIES: dict[str, FaultFamily] = {row.name: row for row in (
    #    name          starts                heal              member       weight ops_s
    _row("kill",        ("kill",),            "start",          "process",   1.0,   1.0, kind="crash"),
    _row("stop",        ("stop",),            "start",          "process",   0.5,   2.0, kind="crash"),
    _row("pause",       ("pause",),           "resume",         "process",   1.0,   1.0, kind="pause"),
    _row("partition",   ("start-partition",), "stop-partition", "partition", 1.0,   3.0, kind="partition",
         local_root=True),
    _row("clock",       _CLOCK_FS,            "reset-clock",    "clock",     1.0,   2.0, kind="clock",
         local_root=True, within_op=("strobe-clock",)),
    # Weighs less: with one fault at a time, power loss hits one node at a time in mixed runs anyway.
    _row("disk",        ("power-loss", "lose-unsynced"), None,  "disk",      0.7,   2.0, kind="power-loss",
         local_root=True),
    _row("admin",       _ADMIN_FS,            None,             "admin",     1.0,   1.0, kind="admin",
         needs=("admin:reassign",)),
    _row("crash-lossy", ("crash-lossy",),     None,             "lossy",     1.0,  15.0, kind="power-loss",
         targeted=True, local_root=True),
    # Weighs double: strikes are the cheapest way into the narrow windows. A strike whose moment never
    # comes waits out its 25 s: the slowest turn of all, which the first round's waits make room for.
    _row("strike",      ("strike",),          "end-strike",     "strike",    2.0,  10.0, kind="crash",
         targeted=True, needs=("traces",)),
    _row("churn",       ("churn",),           None,             "churn",     1.0,   7.0, kind="admin",
         targeted=True, needs=("admin:reassign",)),
    _row("cut",         ("start-cut",),       "stop-cut",       "cut",       1.0,   3.0, kind="partition",
         targeted=True, local_root=True, needs=("role:controller", "replication")),
    _row("strand",      ("strand",),          None,             "strand",    1.0,  25.0, kind="crash",
         targeted=True, local_root=True, needs=("replication",)),
    # Weighs half: one op plays three scripted episodes (about a minute), the historical bugs' windows.
    _row("episodes",    ("episodes",),        None,             "episodes",  0.5,  60.0, kind="crash",
         targeted=True, local_root=True, needs=("admin:reassign", "role:controller", "replication")),
)}
"""The family table: one row per fault family, in the order ``all`` lists them. Everything below is derived."""

FAMILY_FS: dict[str, frozenset[str]] = {name: frozenset(row.starts) for name, row in FAULT_FAMILIES.items()}
"""Fault family (the names ``--nemesis`` takes) -> the fault ops of that family."""

F_FAMILY: dict[str, str] = {f: family for family, fs in FAMILY_FS.items() for f in fs}
"""Fault op -> its family."""

FAMILY_GUARANTEE: dict[str, str] = {name: row.kind for name, row in FAULT_FAMILIES.items()}
"""Fault family -> the kind of fault it is (the table's ``kind``)."""

FAMILY_NEEDS: dict[str, tuple[str, ...]] = {name: row.needs for name, row in FAULT_FAMILIES.items() if row.needs}
"""Fault family -> what it needs from the system under test (the table's ``needs``)."""

FAULT_GUARANTEE: dict[str, str] = {f: FAMILY_GUARANTEE[family] for f, family in F_FAMILY.items()}
"""Fault op -> the kind of fault it is (see ``FAMILY_GUARANTEE``)."""

FAULT_FS: frozenset[str] = frozenset(F_FAMILY)

TARGETED: tuple[str, ...] = tuple(name for name, row in FAULT_FAMILIES.items() if row.targeted)
"""The families ``--nemesis targeted`` stands for (``all`` includes them)."""

MIXES: dict[str, tuple[str, ...]] = {"all": tuple(FAULT_FAMILIES), "targeted": TARGETED}
"""Names ``--nemesis`` takes that stand for several families."""

NO_FAULTS = "none"
"""The name ``--nemesis`` takes for a run without faults (the default)."""

WITHIN_OP_FS: frozenset[str] = frozenset(f for row in FAULT_FAMILIES.values() for f in row.within_op)
"""Faults that are over when their own op completes."""

LASTING_FS: frozenset[str] = FAULT_FS - WITHIN_OP_FS

FINAL_HEAL = "heal"
"""The final generator's op: it ends every lasting fault."""

HEALED_BY: dict[str, frozenset[str]] = {
    **{heal: frozenset().union(*(row.lasting for row in FAULT_FAMILIES.values() if row.heal == heal))
       for heal in dict.fromkeys(row.heal for row in FAULT_FAMILIES.values() if row.heal is not None)},
    FINAL_HEAL: LASTING_FS,
}
"""Heal op -> the lasting faults it ends."""

HEAL_FS: frozenset[str] = frozenset(HEALED_BY)


# -- the names --nemesis takes ----------------------------------------------------------------------------

class UnknownNemesis(ValueError):
    """Names that are neither a family nor a mix (``names`` lists them)."""

    def __init__(self, names: list[str]):
        self.names = names
        super().__init__(f"unknown name(s) {', '.join(names)}; known: {', '.join(NEMESIS_NAMES)}")


NEMESIS_NAMES: tuple[str, ...] = tuple(sorted([*FAULT_FAMILIES, *MIXES]))
"""Every name ``--nemesis`` takes besides ``none``: the families and the mixes."""


def parse_nemesis(value: Any) -> list[str]:
    """The one parser of ``--nemesis`` and of a spec's ``nemesis``: ``"kill,pause"`` / ``["kill"]`` /
    ``None`` / ``"none"`` -> the names given, sorted and de-duplicated, without ``none``.

    Raises ``UnknownNemesis`` for a name that is neither a family nor a mix, and ``ValueError`` for a value
    of another form."""
    if value is None:
        return []
    if isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, list | tuple) and all(isinstance(p, str) for p in value):
        parts = list(value)
    else:
        raise ValueError(f"expected a comma-separated list of names, got {value!r}")
    names = sorted({p.strip() for p in parts if p.strip() and p.strip() != NO_FAULTS})
    unknown = [n for n in names if n not in FAULT_FAMILIES and n not in MIXES]
    if unknown:
        raise UnknownNemesis(unknown)
    return names


def requested_families(value: Any) -> list[str]:
    """The families a ``--nemesis`` value asks for (``parse_nemesis``, the mixes expanded), in table order."""
    named = set(parse_nemesis(value))
    return [name for name in FAULT_FAMILIES
            if name in named or any(name in MIXES[mix] for mix in named & set(MIXES))]


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
