"""Build a nemesis package from names: the composed nemesis, its seeded schedule and its final heal.

``build_package("kill,pause", seed=7)`` (or ``"all"``) returns a ``NemesisPackage``:

- ``nemesis``: a ``ComposedNemesis`` over the members the families need (process faults share one
  ``ProcessNemesis``; partitions ``NetNemesis``; clocks ``ClockNemesis``; fsync loss ``DiskNemesis``;
  admin ``AdminNemesis``; the targeted families of ``nemesis.targeted`` one member each, the lossy
  restart standing in for ``DiskNemesis`` when both are asked for);
- ``schedule``: a seeded ``Schedule`` of ``(delay_s, invoke op)`` pairs (its first round gives every family
  one turn);
- ``run(run, deadline, stop)``: executes the schedule until the monotonic ``deadline`` (or ``stop`` is
  set), recording every invocation and completion in ``run.history`` with process ``"nemesis"``;
- with ``coordinators`` (a subscribing or transactional workload), a share of the kill, stop, pause,
  partition and admin turns is aimed at the group or transaction coordinator (``coordinator_drawers``);
- ``heal(run)``: the final generator's work: one ``heal`` op whose completion carries every member's
  healing evidence (rules removed, clocks reset, processes resumed and restarted, mounts synced).

The run pipeline calls ``setup`` before the cluster starts (the clock and disk nemeses prepare the
node environment and mounts then), ``run`` in a thread, ``heal`` in the final phase and ``teardown``
on every exit path.

The families are the rows of ``harness.faults.FAULT_FAMILIES`` (the names, the ops, the heal op, the
member's name, the weight). What needs nemesis code is here, keyed by the table's names: ``DRAWERS``
(family -> how its start op is drawn) and ``MEMBERS`` (member name -> module and class).
"""

from __future__ import annotations

import importlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.fault_time import DEFAULT_INTERVAL_S
from harness.faults import FAMILY_FS, FAULT_FAMILIES, FINAL_HEAL, requested_families
from nemesis.base import NemesisUnsupported
from nemesis.compose import ComposedNemesis
from nemesis.schedule import Family, Schedule, choice_start, multi_start
from nemesis.targeted.plans import (
    draw_churn,
    draw_crash_lossy,
    draw_cut,
    draw_episodes,
    draw_strand,
    draw_strike,
)

PROCESS_TARGETS = ["one", "minority", "leader", "controller"]
# With a controller quorum: a minority of the voters (fail-over, or nothing if the active one survives)
# and a majority (no metadata progress until the heal).
QUORUM_TARGETS = ["controller-minority", "controller-majority"]
PARTITION_TOPOLOGIES = [
    "isolate-one",
    "halves",
    "random-halves",
    "bridge",
    "majorities-ring",
    "isolate-leader",
    "isolate-controller",
    "one-way",
    "brokers-controller",
    "clients-brokers",
]
# With a controller quorum: the voters split (a minority cut from the majority), and a one-way cut
# between the active controller and another voter.
QUORUM_TOPOLOGIES = ["controllers-split", "controller-one-way"]

# Member name (the family table's ``member`` column) -> (module, class); imported on demand so a missing
# optional part breaks only its families.
MEMBERS: dict[str, tuple[str, str]] = {
    "process": ("nemesis.process", "ProcessNemesis"),
    "partition": ("nemesis.net", "NetNemesis"),
    "clock": ("nemesis.clock", "ClockNemesis"),
    "disk": ("nemesis.disk", "DiskNemesis"),
    "admin": ("nemesis.admin", "AdminNemesis"),
    "lossy": ("nemesis.targeted.lossy", "LossyRestartNemesis"),
    "strike": ("nemesis.targeted.strike", "StrikeNemesis"),
    "churn": ("nemesis.targeted.churn", "ChurnNemesis"),
    "cut": ("nemesis.targeted.cuts", "CutNemesis"),
    "strand": ("nemesis.targeted.strand", "StrandNemesis"),
    "episodes": ("nemesis.targeted.episodes", "EpisodesNemesis"),
}
# A member that serves another's ops too (the lossy restart extends the disk nemesis over the same mounts):
# when both are wanted only the larger one is built, so the data directories are mounted once.
SUPERSEDES = {"lossy": "disk"}
FAMILY_MEMBER: dict[str, str] = {name: row.member for name, row in FAULT_FAMILIES.items()}

Drawer = Callable[[random.Random], tuple[str, dict]]

# Family name (the family table's) -> how its start op is drawn. Every drawer returns one of the family's
# ``starts``; a test holds this table to the family table.
DRAWERS: dict[str, Drawer] = {
    "kill": choice_start("kill", "target", PROCESS_TARGETS),
    "stop": choice_start("stop", "target", PROCESS_TARGETS),
    "pause": choice_start("pause", "target", PROCESS_TARGETS),
    "partition": choice_start("start-partition", "topology", PARTITION_TOPOLOGIES),
    "clock": multi_start([
        choice_start("bump-clock", "target", ["one", "minority", "all"], max_ms=300_000),
        choice_start("skew-clock", "target", ["minority", "majority", "all"], max_ms=60_000),
        choice_start("strobe-clock", "target", ["one", "minority"], delta_ms=20_000, period_ms=500, duration_s=3),
    ]),
    # One node at a time in mixed runs; the correlated variant (several nodes) is asked for explicitly with
    # target "majority"/"all".
    "disk": choice_start("power-loss", "target", ["one", "leader"]),
    "admin": multi_start([
        choice_start("reassign", "kind", ["move", "move", "grow", "shrink", "grow-without-flag",
                                          "shrink-without-flag"]),
        choice_start("cancel-reassignment", "kind", ["any"]),
        choice_start("elect-preferred", "kind", ["all"]),
        choice_start("elect-unclean", "kind", ["all"]),
        choice_start("set-reassignment-mode", "kind", ["incremental", "all-at-once", "parallel"]),
    ]),
    "crash-lossy": draw_crash_lossy,
    "strike": draw_strike,
    "churn": draw_churn,
    "cut": draw_cut,
    "strand": draw_strand,
    "episodes": draw_episodes,
}


# With a controller quorum (``controllers`` > 1) the process families also aim at a minority or a majority
# of the voters, and partitions also split the voters or cut the active controller from one of them.
QUORUM_DRAWERS: dict[str, Drawer] = {
    "kill": choice_start("kill", "target", PROCESS_TARGETS + QUORUM_TARGETS),
    "stop": choice_start("stop", "target", PROCESS_TARGETS + QUORUM_TARGETS),
    "pause": choice_start("pause", "target", PROCESS_TARGETS + QUORUM_TARGETS),
    "partition": choice_start("start-partition", "topology", PARTITION_TOPOLOGIES + QUORUM_TOPOLOGIES),
}


# The share of the process, partition and admin turns aimed at a coordinator when the run's workload has one:
# modest, so that the leaders, the controller and the structural targets keep most of the turns.
COORDINATOR_SHARE = 0.25


def _sometimes(base: Drawer, aimed: Drawer, share: float) -> Drawer:
    """A drawer that draws with ``aimed`` in a ``share`` of the turns and with ``base`` otherwise."""

    def draw(rng: random.Random) -> tuple[str, dict]:
        return aimed(rng) if rng.random() < share else base(rng)

    return draw


def _coordinator_move(coordinators: list[str]) -> Drawer:
    def draw(rng: random.Random) -> tuple[str, dict]:
        return "reassign", {"kind": "coordinator", "target": rng.choice(coordinators)}

    return draw


def coordinator_drawers(coordinators: tuple[str, ...] | list[str], base: dict[str, Drawer],
                        share: float = COORDINATOR_SHARE) -> dict[str, Drawer]:
    """The process, partition and admin drawers of ``base`` with a ``share`` of their turns aimed at the run's
    ``coordinators`` (``nemesis.targets.coordinator_targets``): kill, stop or pause the coordinator, cut it
    off (``isolate-<target>``), or move its partition's leadership (``reassign`` of kind ``coordinator``).
    Without coordinators ``base`` is returned unchanged (the same seed draws the same schedule as before)."""
    coordinators = list(coordinators)
    if not coordinators:
        return dict(base)
    aimed: dict[str, Drawer] = {f: choice_start(f, "target", coordinators) for f in ("kill", "stop", "pause")}
    aimed["partition"] = choice_start("start-partition", "topology", [f"isolate-{c}" for c in coordinators])
    aimed["admin"] = _coordinator_move(coordinators)
    return {name: _sometimes(drawer, aimed[name], share) if name in aimed else drawer
            for name, drawer in base.items()}


def families(controllers: int = 1, coordinators: tuple[str, ...] | list[str] = ()) -> dict[str, Family]:
    """Every fault family of the table, with its start drawer, heal op and weight, in table order; with a
    controller quorum (``controllers`` > 1) the process and partition families also draw the quorum's
    targets and topologies (``QUORUM_DRAWERS``); with ``coordinators`` (the run's group or transaction
    coordinator targets) some of their turns aim at those (``coordinator_drawers``)."""
    drawers = coordinator_drawers(coordinators, {**DRAWERS, **(QUORUM_DRAWERS if controllers > 1 else {})})
    return {name: Family(name, drawers[name], (row.heal, {}) if row.heal else None, row.weight, FAMILY_FS[name])
            for name, row in FAULT_FAMILIES.items()}


def _member(name: str, options: dict[str, Any]) -> Any:
    module_name, class_name = MEMBERS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise NemesisUnsupported(f"nemesis {name!r} is not available: {exc}") from exc
    return getattr(module, class_name)(**options.get(name, {}))


@dataclass
class NemesisPackage:
    """A composed nemesis with its schedule; see the module docstring."""

    names: list[str]
    nemesis: ComposedNemesis
    schedule: Schedule
    log: list[dict] = field(default_factory=list)

    def setup(self, run: Any) -> None:
        """Set every member up (raises NemesisUnsupported with a clear message when one cannot work)."""
        self.nemesis.setup(run)

    def execute(self, run: Any, op: dict) -> dict:
        """Invoke one op, recording invocation and completion in ``run.history`` (when it has one).

        An exception inside the nemesis completes the op as ``info`` with the error: the fault may or may
        not have taken effect, and it has no evidence, so coverage does not count it as effective.
        """
        op = {"type": "invoke", "process": "nemesis", **op}
        invoke = run.history.append(op) if run.history is not None else dict(op)
        try:
            done = self.nemesis.invoke(run, dict(invoke))
            completion = {**done, "type": done.get("type", "ok")}
        except Exception as exc:
            completion = {**invoke, "type": "info", "error": f"{type(exc).__name__}: {exc}"}
        completion.pop("index", None)
        completion.pop("time", None)
        if run.history is not None:
            completion = run.history.append(completion)
        self.log.append(completion)
        return completion

    def run(self, run: Any, deadline: float, stop: threading.Event | None = None) -> int:
        """Execute the schedule until monotonic ``deadline`` or ``stop``; return the ops executed.

        A fault in place when the deadline passes (or ``stop`` is set) gets its stop op at once, so
        this loop never returns with a scheduled fault in place (the final heal covers the rest). In the
        first round a wait never leaves less time before the deadline than the turns still to come
        typically take (``Schedule.first_round_owed``): ops that ran long eat into the waits, not into
        the turns of the families after them.
        """
        stop = stop or threading.Event()
        stop_fs = {fam.stop[0] for fam in self.schedule.families if fam.stop}
        owed = self.schedule.first_round_owed()
        count = 0
        for index, (delay, op) in enumerate(self.schedule):
            if index < len(owed):
                # The first round: every family gets its turn before the deadline. When ops took longer
                # than their typical time, the waits still to come shrink to make room (down to none).
                room = deadline - time.monotonic() - owed[index]
                delay = min(delay, max(0.0, room / (len(owed) - index)))
            if op["f"] in stop_fs:
                # Ending a fault: wait at most until the deadline, and not at all once stopped.
                stop.wait(max(0.0, min(delay, deadline - time.monotonic())))
            else:
                if stop.is_set() or time.monotonic() + delay >= deadline:
                    break
                if stop.wait(delay):
                    break
            self.execute(run, op)
            count += 1
        return count

    def heal(self, run: Any) -> dict:
        """The final generator: one ``heal`` op whose completion has every member's healing evidence."""
        return self._heal(run)

    def _heal(self, run: Any) -> dict:
        invoke = {"type": "invoke", "process": "nemesis", "f": FINAL_HEAL, "value": None}
        if run.history is not None:
            invoke = run.history.append(invoke)
        try:
            evidence = self.nemesis.heal_all(run)
            completion = {"type": "ok", "process": "nemesis", "f": FINAL_HEAL, "value": evidence}
        except Exception as exc:
            completion = {
                "type": "info",
                "process": "nemesis",
                "f": FINAL_HEAL,
                "value": None,
                "error": f"{type(exc).__name__}: {exc}",
            }
        if run.history is not None:
            completion = run.history.append(completion)
        self.log.append(completion)
        return completion

    def teardown(self, run: Any) -> None:
        """Release everything (idempotent, never raises)."""
        self.nemesis.teardown(run)


def build_package(
    names: str | list[str] | None,
    seed: int,
    interval_s: float = DEFAULT_INTERVAL_S,
    options: dict[str, dict[str, Any]] | None = None,
    controllers: int = 1,
    coordinators: tuple[str, ...] | list[str] = (),
) -> NemesisPackage:
    """Build the package for ``names`` (``"kill,pause"``, a list, ``"all"``, ``"targeted"``, or None/"none").

    ``options`` passes constructor keyword arguments per member (``{"disk": {...}}``); ``controllers``, the
    size of the controller quorum, adds the quorum's targets and topologies to the draws; ``coordinators``
    (``nemesis.targets.coordinator_targets`` of the run's workload) aims some turns at those coordinators.
    """
    try:
        wanted = requested_families(names)
    except ValueError as exc:
        raise ValueError(f"unknown nemesis: {exc}") from None
    known = families(controllers, coordinators)
    options = {member: dict(opts) for member, opts in (options or {}).items()}
    # The process member serves families that need different host abilities (signals; pauses): it is
    # told which of its ops the run asks for, so its setup refuses only what this run would use.
    process_fs = set().union(*(FAMILY_FS[n] for n in wanted if FAMILY_MEMBER[n] == "process"))
    if process_fs:
        options.setdefault("process", {}).setdefault("fs", process_fs)
    wanted_members = {FAMILY_MEMBER[n] for n in wanted}
    members: dict[str, Any] = {}
    for name in wanted:
        member = FAMILY_MEMBER[name]
        member = next((big for big, small in SUPERSEDES.items() if small == member and big in wanted_members),
                      member)
        if member not in members:
            members[member] = _member(member, options)
    schedule = Schedule([known[n] for n in wanted], seed=seed, interval_s=interval_s)
    return NemesisPackage(wanted, ComposedNemesis(members), schedule)
