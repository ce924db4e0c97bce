"""What a suite runs: named suites, the product of the options, and each cell's expected outcome (pure).

A suite is a list of ``Entry`` rows (a scenario, or the randomized ``queue`` workload with fault mixes).
``expand`` takes the rows and the user's options to the cells, the product Jepsen's ``test-all`` runs:
scenario x variant x backend, or workload x variant x nemesis mix x backend, each ``test_count`` times.
Option semantics:

- ``variants``: keep only these variants (a scenario offers the variants it is written for; one that
  offers none of them is left out);
- ``backends``: replaces every row's backends;
- ``mixes``: replaces the fault mixes of workload rows (scenarios bring their own faults);
- ``test_count``: every cell that many times, each with its own seed;
- ``time_limit_s``: the main phase of workload runs. Its nemesis interval, unless a row sets one, is the
  spec's own: fitted to the time limit so that the schedule's first round gives every family of the mix its
  turn (``harness.fault_time``, the rule every run follows). A mix the time limit is too short for, even
  at the shortest fitted interval, is refused when the suite is planned, with the minimum it needs.

Each cell carries what it is expected to show: a scenario's expectation for the variant (``valid`` or
``expected-failure``, ``kraftcheck.scenarios.base.OUTCOMES``); a workload run is expected ``valid``, and
also accepts ``expected-failure`` when its configuration has a documented known issue (the guarantee
profile says ``known-issue``, e.g. v3.5 with lossy faults: Last Replica Standing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checkers.queue.profiles import derive_profile
from harness.clusters import resolve
from harness.fault_time import too_short
from harness.faults import NEMESIS_NAMES, UnknownNemesis, parse_nemesis, requested_families
from harness.spec import BACKENDS, DEFAULTS, VARIANTS, RunSpec, SpecError
from harness.sut import SutError
from kraftcheck import scenarios
from reports.catalog import workload_mode

WORKLOADS = ("queue",)
# Fault mixes of the full suite's randomized runs (families joined by "+"; "none" is a fault-free run).
FULL_MIXES = ("none", "kill", "pause", "partition", "clock", "disk", "admin", "kill+partition")
# The systems suite's fault mixes: the families every system can take, alone and together.
SYSTEM_MIXES = (("kill", "partition"), ("kill", "pause", "partition", "clock"))
# The smoke suite's randomized run: short, its interval fitted so that every family is attempted.
SMOKE_WORKLOAD = (("time_limit_s", 20.0),)
# The queue workload's modes beside the plain one (assigned partitions, single sends): consumers in a
# consumer group, transactions at read_committed, and both (Jepsen's :sub-via and :txn; issue 24).
WORKLOAD_MODES: tuple[tuple[tuple[str, Any], ...], ...] = (
    (("sub_via", "subscribe"),),
    (("txn", True),),
    (("sub_via", "subscribe"), ("txn", True)),
)
MODE_KEYS = ("sub_via", "txn", "isolation_level")
# Their fault mixes: the faults the issue names, then the coordinator-aimed mix (kills, pauses and cuts of
# the group and transaction coordinators, and moves of their partitions, come with these families).
MODE_MIXES = (("kill", "partition"), ("kill", "pause", "partition", "admin"))
# Long enough for rebalances and several transactions per process between faults.
MODE_TIME_LIMIT = (("time_limit_s", 120.0),)


def check_time(mix: tuple[str, ...], extra: dict[str, Any]) -> None:
    """``PlanError`` when a workload run of ``mix`` with the options ``extra`` is too short for one turn of
    each of its families (the spec's own rule, ``harness.fault_time``), naming the minimum."""
    time_limit_s = extra.get("time_limit_s", DEFAULTS["time_limit_s"])
    problem = too_short(requested_families(mix), time_limit_s, extra.get("nemesis_interval_s"))
    if problem:
        raise PlanError(f"--time-limit: fault mix {'+'.join(mix)}: {problem}")


def check_system(extra: dict[str, Any], require_installed: bool = True) -> None:
    """``PlanError`` when a workload row names a system under test that cannot run here (unknown, not
    installed unless ``require_installed`` is false), with what to do about it."""
    if extra.get("sut") in (None, "reference"):
        return
    try:
        resolve(RunSpec.from_options(extra), require_installed=require_installed)
    except SutError as exc:
        raise PlanError(f"--sut: {exc}") from None
    except SpecError as exc:
        raise PlanError(f"options of a --sut row: {exc}") from None


@dataclass(frozen=True)
class Entry:
    """One row of a suite before expansion: a scenario or a workload, with its axes."""

    kind: str  # "scenario" | "workload"
    name: str
    variants: tuple[str, ...] | None = None  # None: every variant the scenario offers (both for workloads)
    backends: tuple[str, ...] = ("local",)
    mixes: tuple[tuple[str, ...], ...] = ((),)
    options: tuple[tuple[str, Any], ...] = ()  # extra spec options for workload runs


@dataclass(frozen=True)
class Cell:
    """One run of the suite: what to run, where, and what it is expected to show."""

    kind: str
    name: str
    variant: str
    backend: str
    nemesis: tuple[str, ...]
    repeat: int
    expected: str
    accepted: tuple[str, ...]
    options: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def mix(self) -> str:
        """The fault mix as written on the command line (``kill+partition``, ``none``)."""
        return "+".join(self.nemesis) or "none"

    @property
    def system(self) -> str:
        """The system under test: the variant for the reference implementation, else ``name-setting``."""
        options = dict(self.options)
        sut = options.get("sut")
        if sut in (None, "reference"):
            return self.variant
        return f"{sut}-{options['sut_setting']}" if options.get("sut_setting") else str(sut)

    @property
    def mode(self) -> str:
        """A workload's mode (``reports.catalog.workload_mode``: ``subscribe, txn``; empty when plain)."""
        return workload_mode(dict(self.options)) if self.kind == "workload" else ""

    @property
    def cell_id(self) -> str:
        """A stable, readable id: ``name/system/mix/backend#repeat`` (the system: the reference
        implementation's variant, or another system and its setting); a workload in a mode other than
        the plain one names it after the workload: ``queue[subscribe,txn]/kip966/kill+partition/local#1``."""
        name = f"{self.name}[{self.mode.replace(', ', ',')}]" if self.mode else self.name
        return f"{name}/{self.system}/{self.mix}/{self.backend}#{self.repeat}"


class PlanError(ValueError):
    """Options that describe no suite (the message names the option)."""


def parse_list(flag: str, text: str | None, allowed: tuple[str, ...]) -> tuple[str, ...] | None:
    """``"v3.5,kip966"`` -> a tuple of allowed names (None when not given); ``PlanError`` names the flag."""
    if text is None:
        return None
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise PlanError(f"{flag}: {', '.join(bad) or 'empty'} not among {', '.join(allowed)}")
    return names


def parse_mixes(text: str | None, families: tuple[str, ...] = NEMESIS_NAMES) -> tuple[tuple[str, ...], ...] | None:
    """``"none,kill+partition,disk"`` -> ((), ("kill", "partition"), ("disk",)): each mix read by the one
    ``--nemesis`` parser (``harness.faults.parse_nemesis``), its names limited to ``families``."""
    if text is None:
        return None
    mixes: list[tuple[str, ...]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            names = tuple(parse_nemesis(part.split("+")))
            bad = [n for n in names if n not in families]
        except UnknownNemesis as exc:
            bad = exc.names
        if bad:
            raise PlanError(f"--nemesis: unknown fault {', '.join(bad)} in {part!r}; known: "
                            f"{', '.join(families)} (join with '+', separate mixes with ',')")
        if names not in mixes:
            mixes.append(names)
    if not mixes:
        raise PlanError("--nemesis: no fault mix given")
    return tuple(mixes)


def mode_entries(variants: tuple[str, ...], backends: tuple[str, ...]) -> list[Entry]:
    """The queue workload in each of ``WORKLOAD_MODES``, with ``MODE_MIXES`` and ``MODE_TIME_LIMIT``."""
    return [Entry("workload", "queue", variants, backends=backends, mixes=MODE_MIXES,
                  options=(*mode, *MODE_TIME_LIMIT)) for mode in WORKLOAD_MODES]


def named_suites() -> dict[str, list[Entry]]:
    """``smoke`` (minutes, what CI runs), ``seeds`` (every scenario; LRS also on docker), ``full`` (also
    the workload modes), ``systems`` (the queue workload on the reference implementation and on every
    tansu setting that keeps data, side by side: tansu must be installed, ``kraftcheck sut install
    tansu``), and ``modes`` (the queue workload subscribing, transactional and both, on KIP-966, under
    the faults the coordinators are aimed at)."""
    every = scenarios.all_scenarios()
    smoke = [
        Entry("scenario", "last-replica-standing"),
        Entry("scenario", "reassign-move-one", ("kip966",)),
        Entry("scenario", "min-isr", ("v3.5",)),
        Entry("workload", "queue", ("kip966",), mixes=(("kill", "partition"),), options=SMOKE_WORKLOAD),
    ]
    seeds = [Entry("scenario", s.name) for s in every] + [
        Entry("scenario", "last-replica-standing", backends=("docker",))]
    full = [Entry("scenario", s.name, backends=("local", "docker")) for s in every] + [
        Entry("workload", "queue", VARIANTS, backends=("local", "docker"),
              mixes=tuple(tuple(m.split("+")) if m != "none" else () for m in FULL_MIXES)),
        *mode_entries(VARIANTS, ("local", "docker"))]
    one_broker = (("brokers", 1), ("replication_factor", 1), ("min_isr", 1))
    systems = [
        Entry("workload", "queue", ("kip966",), mixes=SYSTEM_MIXES, options=(("time_limit_s", 60.0),)),
        Entry("workload", "queue", ("kip966",), mixes=SYSTEM_MIXES,
              options=(("sut", "tansu"), ("sut_setting", "sqlite"), *one_broker, ("time_limit_s", 60.0))),
        Entry("workload", "queue", ("kip966",), mixes=SYSTEM_MIXES,
              options=(("sut", "tansu"), ("sut_setting", "postgres"), ("time_limit_s", 60.0))),
    ]
    modes = mode_entries(("kip966",), ("local",))
    return {"smoke": smoke, "seeds": seeds, "full": full, "systems": systems, "modes": modes}


def entries_for(name: str) -> list[Entry]:
    """The rows of a named suite, or of one scenario (name or alias) or workload; ``PlanError`` otherwise."""
    suites = named_suites()
    if name in suites:
        return suites[name]
    if name in WORKLOADS:
        return [Entry("workload", name, VARIANTS)]
    try:
        return [Entry("scenario", scenarios.get(name).name)]
    except scenarios.UnknownScenario:
        raise PlanError(f"unknown suite {name!r}; suites: {', '.join(suites)}; or a scenario "
                        f"({', '.join(scenarios.names())}) or workload ({', '.join(WORKLOADS)})") from None


def workload_accepts(variant: str, nemesis: tuple[str, ...], options: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The outcomes a randomized run may show: ``valid``, and ``expected-failure`` when the guarantee
    profile of its configuration (the variant, the faults, and the row's options such as the workload
    mode) marks a known issue (documented, explained, not a bug)."""
    profile = derive_profile({"acks": "all", **(options or {}), "variant": variant, "nemesis": list(nemesis)}, [],
                             has_final=True)
    if "known-issue" in profile["statuses"].values():
        return ("valid", "expected-failure")
    return ("valid",)


def expand(entries: list[Entry], *, variants: tuple[str, ...] | None = None,
           backends: tuple[str, ...] | None = None, mixes: tuple[tuple[str, ...], ...] | None = None,
           test_count: int = 1, time_limit_s: float | None = None, require_installed: bool = True) -> list[Cell]:
    """The cells of ``entries`` under the user's options (module docstring), in a stable order.
    ``require_installed``: false to plan (and list) cells of systems not built on this machine yet."""
    if test_count < 1:
        raise PlanError(f"--test-count: must be >= 1, got {test_count}")
    if time_limit_s is not None and time_limit_s <= 0:
        raise PlanError(f"--time-limit: must be > 0, got {time_limit_s:g}")
    for given, allowed, flag in ((variants, VARIANTS, "--variants"), (backends, BACKENDS, "--backends")):
        bad = [v for v in given or () if v not in allowed]
        if bad:
            raise PlanError(f"{flag}: {', '.join(bad)} not among {', '.join(allowed)}")
    cells: list[Cell] = []
    seen: set[str] = set()
    for entry in entries:
        if entry.kind == "scenario":
            scenario = scenarios.get(entry.name)
            offered = entry.variants or scenario.variants
            axes = [((), {})]
        else:
            offered = entry.variants or VARIANTS
            extra = dict(entry.options)
            if time_limit_s is not None:
                extra["time_limit_s"] = time_limit_s
            axes = [(mix, extra) for mix in (mixes or entry.mixes)]
            for mix, extra in axes:
                check_time(mix, extra)
            check_system(extra, require_installed)
        chosen = [v for v in offered if variants is None or v in variants]
        for variant in chosen:
            for backend in backends or entry.backends:
                for mix, extra in axes:
                    if entry.kind == "scenario":
                        expected = scenario.expected[variant]
                        accepted: tuple[str, ...] = (expected,)
                        faults = tuple(scenario.spec_options.get("nemesis") or ())
                    else:
                        expected, accepted, faults = "valid", workload_accepts(
                            variant, mix, {k: v for k, v in extra.items() if k in MODE_KEYS}), tuple(mix)
                    for repeat in range(1, test_count + 1):
                        cell = Cell(entry.kind, entry.name, variant, backend, faults, repeat, expected, accepted,
                                    tuple(sorted(extra.items())))
                        if cell.cell_id not in seen:
                            seen.add(cell.cell_id)
                            cells.append(cell)
    if not cells:
        raise PlanError("no cells: the options leave nothing to run (check --variants / --backends)")
    return cells
