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
- ``time_limit_s``: the main phase of workload runs. A run with faults then also gets a nemesis interval
  short enough that each family of its mix is attempted (``interval_for``): at the default 5 s a 15 s run
  of ``kill+partition`` has room for about three nemesis ops and often never tries one of the two, and
  coverage then caps the verdict at unknown.

Each cell carries what it is expected to show: a scenario's expectation for the variant (``valid`` or
``expected-failure``, ``harness.app.scenarios.base.OUTCOMES``); a workload run is expected ``valid``, and
also accepts ``expected-failure`` when its configuration has a documented known issue (the guarantee
profile says ``known-issue``, e.g. v3.5 with lossy faults: Last Replica Standing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checkers.profiles import derive_profile
from harness.app import scenarios
from harness.core.spec import BACKENDS, VARIANTS

WORKLOADS = ("queue",)
# Fault mixes of the full suite's randomized runs (families joined by "+"; "none" is a fault-free run).
FULL_MIXES = ("none", "kill", "pause", "partition", "clock", "disk", "admin", "kill+partition")
# The smoke suite's randomized run: short, with faults often enough that every family is attempted.
SMOKE_WORKLOAD = (("nemesis_interval_s", 2.0), ("time_limit_s", 20.0))


DEFAULT_NEMESIS_INTERVAL_S = 5.0


def interval_for(time_limit_s: float, families: int) -> float:
    """A mean nemesis interval at which a main phase of ``time_limit_s`` holds about three ops per family
    (a fault, its heal and room for the schedule's shuffle), never longer than the default."""
    return round(min(DEFAULT_NEMESIS_INTERVAL_S, time_limit_s / (3 * max(1, families))), 2)


def _with_interval(extra: dict[str, Any], mix: tuple[str, ...], time_limit_s: float | None) -> dict[str, Any]:
    if time_limit_s is None or not mix or "nemesis_interval_s" in extra:
        return extra
    return {**extra, "nemesis_interval_s": interval_for(time_limit_s, len(mix))}


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
    def cell_id(self) -> str:
        """A stable, readable id: ``name/variant/mix/backend#repeat``."""
        return f"{self.name}/{self.variant}/{self.mix}/{self.backend}#{self.repeat}"


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


def parse_mixes(text: str | None, families: tuple[str, ...]) -> tuple[tuple[str, ...], ...] | None:
    """``"none,kill+partition,disk"`` -> ((), ("kill", "partition"), ("disk",)); families checked."""
    if text is None:
        return None
    mixes: list[tuple[str, ...]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        names = tuple(sorted({n.strip() for n in part.split("+") if n.strip() and n.strip() != "none"}))
        bad = [n for n in names if n not in families]
        if bad:
            raise PlanError(f"--nemesis: unknown fault {', '.join(bad)} in {part!r}; known: "
                            f"{', '.join(families)} (join with '+', separate mixes with ',')")
        if names not in mixes:
            mixes.append(names)
    if not mixes:
        raise PlanError("--nemesis: no fault mix given")
    return tuple(mixes)


def named_suites() -> dict[str, list[Entry]]:
    """``smoke`` (minutes, what CI runs), ``seeds`` (every scenario; LRS also on docker), ``full``."""
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
              mixes=tuple(tuple(m.split("+")) if m != "none" else () for m in FULL_MIXES))]
    return {"smoke": smoke, "seeds": seeds, "full": full}


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


def workload_accepts(variant: str, nemesis: tuple[str, ...]) -> tuple[str, ...]:
    """The outcomes a randomized run may show: ``valid``, and ``expected-failure`` when the guarantee
    profile of its configuration marks a known issue (documented, explained, not a bug)."""
    profile = derive_profile({"variant": variant, "nemesis": list(nemesis), "acks": "all"}, [], has_final=True)
    if "known-issue" in profile["statuses"].values():
        return ("valid", "expected-failure")
    return ("valid",)


def expand(entries: list[Entry], *, variants: tuple[str, ...] | None = None,
           backends: tuple[str, ...] | None = None, mixes: tuple[tuple[str, ...], ...] | None = None,
           test_count: int = 1, time_limit_s: float | None = None) -> list[Cell]:
    """The cells of ``entries`` under the user's options (module docstring), in a stable order."""
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
            axes = [(mix, _with_interval(extra, mix, time_limit_s)) for mix in (mixes or entry.mixes)]
        chosen = [v for v in offered if variants is None or v in variants]
        for variant in chosen:
            for backend in backends or entry.backends:
                for mix, extra in axes:
                    if entry.kind == "scenario":
                        expected = scenario.expected[variant]
                        accepted: tuple[str, ...] = (expected,)
                        faults = tuple(scenario.spec_options.get("nemesis") or ())
                    else:
                        expected, accepted, faults = "valid", workload_accepts(variant, mix), tuple(mix)
                    for repeat in range(1, test_count + 1):
                        cell = Cell(entry.kind, entry.name, variant, backend, faults, repeat, expected, accepted,
                                    tuple(sorted(extra.items())))
                        if cell.cell_id not in seen:
                            seen.add(cell.cell_id)
                            cells.append(cell)
    if not cells:
        raise PlanError("no cells: the options leave nothing to run (check --variants / --backends)")
    return cells
