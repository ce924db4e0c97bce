"""Build a nemesis package from names: the composed nemesis, its seeded schedule and its final heal.

``build_package("kill,pause", seed=7)`` (or ``"all"``) returns a ``NemesisPackage``:

- ``nemesis``: a ``ComposedNemesis`` over the members the families need (process faults share one
  ``ProcessNemesis``; partitions ``NetNemesis``; clocks ``ClockNemesis``; fsync loss ``DiskNemesis``;
  admin ``AdminNemesis``; the targeted families of ``nemesis.targeted`` one member each, the lossy
  restart standing in for ``DiskNemesis`` when both are asked for);
- ``schedule``: a seeded ``Schedule`` of ``(delay_s, invoke op)`` pairs;
- ``run(run, deadline, stop)``: executes the schedule until the monotonic ``deadline`` (or ``stop`` is
  set), recording every invocation and completion in ``run.history`` with process ``"nemesis"``;
- ``heal(run)``: the final generator's work: one ``heal`` op whose completion carries every member's
  healing evidence (rules removed, clocks reset, processes resumed and restarted, mounts synced).

The run pipeline calls ``setup`` before the cluster starts (the clock and disk nemeses prepare the
node environment and mounts then), ``run`` in a thread, ``heal`` in the final phase and ``teardown``
on every exit path.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.core.faults import FAMILY_FS
from nemesis.base import NemesisUnsupported
from nemesis.compose import ComposedNemesis
from nemesis.coverage import requested_families
from nemesis.schedule import Family, Schedule, choice_start, multi_start
from nemesis.targeted.plans import draw_churn, draw_crash_lossy, draw_cut, draw_strand, draw_strike

PROCESS_TARGETS = ["one", "minority", "leader", "controller"]
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

# family -> (module, class); imported on demand so a missing optional part breaks only its family.
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
}
# A member that serves another's ops too (the lossy restart extends the disk nemesis over the same mounts):
# when both are wanted only the larger one is built, so the data directories are mounted once.
SUPERSEDES = {"lossy": "disk"}
FAMILY_MEMBER = {
    "kill": "process",
    "stop": "process",
    "pause": "process",
    "partition": "partition",
    "clock": "clock",
    "disk": "disk",
    "admin": "admin",
    "crash-lossy": "lossy",
    "strike": "strike",
    "churn": "churn",
    "cut": "cut",
    "strand": "strand",
}


def families() -> dict[str, Family]:
    """Every fault family with its start drawer and stop op."""
    return {
        "kill": Family(
            "kill", choice_start("kill", "target", PROCESS_TARGETS), ("start", {}), 1.0, FAMILY_FS["kill"]
        ),
        "stop": Family(
            "stop", choice_start("stop", "target", PROCESS_TARGETS), ("start", {}), 0.5, FAMILY_FS["stop"]
        ),
        "pause": Family(
            "pause", choice_start("pause", "target", PROCESS_TARGETS), ("resume", {}), 1.0, FAMILY_FS["pause"]
        ),
        "partition": Family(
            "partition",
            choice_start("start-partition", "topology", PARTITION_TOPOLOGIES),
            ("stop-partition", {}),
            1.0,
            FAMILY_FS["partition"],
        ),
        "clock": Family(
            "clock",
            multi_start(
                [
                    choice_start("bump-clock", "target", ["one", "minority", "all"], max_ms=300_000),
                    choice_start("skew-clock", "target", ["minority", "majority", "all"], max_ms=60_000),
                    choice_start(
                        "strobe-clock",
                        "target",
                        ["one", "minority"],
                        delta_ms=20_000,
                        period_ms=500,
                        duration_s=3,
                    ),
                ]
            ),
            ("reset-clock", {}),
            1.0,
            FAMILY_FS["clock"],
        ),
        # At most one fault at a time, so power loss hits one node at a time in mixed runs; the
        # correlated variant (several nodes) is asked for explicitly with target "majority"/"all".
        "disk": Family(
            "disk", choice_start("power-loss", "target", ["one", "leader"]), None, 0.7, FAMILY_FS["disk"]
        ),
        "admin": Family(
            "admin",
            multi_start(
                [
                    choice_start(
                        "reassign",
                        "kind",
                        ["move", "move", "grow", "shrink", "grow-without-flag", "shrink-without-flag"],
                    ),
                    choice_start("cancel-reassignment", "kind", ["any"]),
                    choice_start("elect-preferred", "kind", ["all"]),
                    choice_start("elect-unclean", "kind", ["all"]),
                    choice_start("set-reassignment-mode", "kind", ["incremental", "all-at-once", "parallel"]),
                ]
            ),
            None,
            1.0,
            FAMILY_FS["admin"],
        ),
        "crash-lossy": Family("crash-lossy", draw_crash_lossy, None, 1.0, FAMILY_FS["crash-lossy"]),
        # Strikes come twice per round: they are the cheapest way into the narrow windows.
        "strike": Family("strike", draw_strike, ("end-strike", {}), 2.0, FAMILY_FS["strike"]),
        "churn": Family("churn", draw_churn, None, 1.0, FAMILY_FS["churn"]),
        "cut": Family("cut", draw_cut, ("stop-cut", {}), 1.0, FAMILY_FS["cut"]),
        "strand": Family("strand", draw_strand, None, 1.0, FAMILY_FS["strand"]),
    }


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
        this loop never returns with a scheduled fault in place (the final heal covers the rest).
        """
        stop = stop or threading.Event()
        stop_fs = {fam.stop[0] for fam in self.schedule.families if fam.stop}
        count = 0
        for delay, op in self.schedule:
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
        invoke = {"type": "invoke", "process": "nemesis", "f": "heal", "value": None}
        if run.history is not None:
            invoke = run.history.append(invoke)
        try:
            evidence = self.nemesis.heal_all(run)
            completion = {"type": "ok", "process": "nemesis", "f": "heal", "value": evidence}
        except Exception as exc:
            completion = {
                "type": "info",
                "process": "nemesis",
                "f": "heal",
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
    interval_s: float = 10.0,
    options: dict[str, dict[str, Any]] | None = None,
) -> NemesisPackage:
    """Build the package for ``names`` (``"kill,pause"``, a list, ``"all"``, ``"targeted"``, or None/"none").

    ``options`` passes constructor keyword arguments per member (``{"disk": {...}}``).
    """
    wanted = requested_families(names)
    known = families()
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ValueError(f"unknown nemesis {', '.join(unknown)}; known: {', '.join(known)}, all, targeted")
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
