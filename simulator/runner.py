"""Running schedules: one (``run_schedule``), one seed (``simulate``), many seeds (``search``).

``simulate(seed, options)`` is the in-process entry point: it builds the seed's schedule, runs it and
returns a ``Result``; setting up a world costs well under a millisecond, so a caller (a mutation test, a
property test) can run hundreds of seeds against patched protocol code in seconds. ``run_seeds`` runs
seeds in order, on several processes when asked, and yields their results in seed order; ``search`` returns
the first failing one (so the answer does not depend on how the work was split).

With ``count_guards`` each schedule runs under ``guard_count.counting`` and its ``Result`` carries the
firings of the guard table (``guards``: guard index -> (times, kinds of message)); a search given a
``GuardTally`` adds every result to it and runs its whole budget, a finding or not (a coverage table of the
schedules before the first finding only would say little), still returning the first failing result.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.errors import InvariantViolation
from simulator import steer
from simulator.guard_count import GuardCounter, counting
from simulator.guard_report import GuardTally
from simulator.guards import core_guards
from simulator.monitor import Finding
from simulator.options import SimOptions
from simulator.schedule import Schedule, generate
from simulator.world import World


@dataclass
class Result:
    """The outcome of one schedule."""

    schedule: Schedule
    finding: Finding | None
    steps: int
    sim_ms: int
    truncated: bool = False
    trace: list[dict[str, Any]] | None = field(default=None, repr=False)
    ops: list[dict[str, Any]] | None = field(default=None, repr=False)
    guards: dict[int, tuple[int, tuple[str, ...]]] | None = field(default=None, repr=False)

    @property
    def seed(self) -> int:
        """The schedule's seed."""
        return self.schedule.seed


def run_schedule(schedule: Schedule, keep_trace: bool = False, count_guards: bool = False) -> Result:
    """Run one schedule to its end or its first finding (a node that cannot even start, the core raising
    while the world is built, is a finding too, never a crash of the simulator). ``count_guards``: also
    count the guard table's firings (``Result.guards``)."""
    if not count_guards:
        return _run(schedule, keep_trace)
    counter = GuardCounter(core_guards())
    with counting(counter):
        result = _run(schedule, keep_trace)
    result.guards = {i: (n, tuple(sorted(counter.kinds[i]))) for i, n in enumerate(counter.fired) if n}
    return result


def _run(schedule: Schedule, keep_trace: bool) -> Result:
    try:
        world = World(schedule, keep_trace=keep_trace)
    except Exception as exc:
        tb = traceback.format_exception(exc)
        rule = getattr(exc, "rule", "core" if isinstance(exc, InvariantViolation) else "exception")
        return Result(schedule, Finding(rule, "".join(tb[-3:]).strip(), 0, 0), 0, 0)
    world.run()
    return Result(schedule, world.finding, world.steps, world.now, world.truncated, world.trace,
                  world.clients.history() if keep_trace else None)


def simulate(seed: int, options: SimOptions | None = None, count_guards: bool = False) -> Result:
    """Generate the schedule of ``seed`` and run it."""
    return run_schedule(generate(seed, options or SimOptions()), count_guards=count_guards)


@dataclass
class SearchStats:
    """What a search did: schedules run, those cut at ``max_steps``, steps simulated, wall time."""

    schedules: int = 0
    truncated: int = 0
    steps: int = 0
    sim_ms: int = 0
    wall_s: float = 0.0


def _run_seed(args: tuple[int, SimOptions, bool]) -> Result:
    return simulate(*args)


def run_seeds(first_seed: int, count: int | None, options: SimOptions, workers: int = 1,
              time_limit_s: float | None = None, count_guards: bool = False) -> Iterator[Result]:
    """The results of seeds ``first_seed, first_seed + 1, ...`` in seed order (``count`` of them, or until
    ``time_limit_s`` has passed when the next seed would start), on ``workers`` processes. Stopping the
    iteration early cancels what has not started."""
    start = time.monotonic()
    seeds = _seeds(first_seed, count)

    def more() -> int | None:
        if time_limit_s is not None and time.monotonic() - start > time_limit_s:
            return None
        return next(seeds, None)

    steer.aims(options.controllers > 1)  # the guard table, built once here rather than in every worker
    if workers <= 1:
        while (seed := more()) is not None:
            yield simulate(seed, options, count_guards)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        pending: list[Any] = []
        try:
            while True:
                while len(pending) < workers * 4 and (seed := more()) is not None:
                    pending.append(pool.submit(_run_seed, (seed, options, count_guards)))
                if not pending:
                    return
                yield pending.pop(0).result()
        finally:
            for future in pending:
                future.cancel()


def search(first_seed: int, count: int | None, options: SimOptions, workers: int = 1,
           time_limit_s: float | None = None, stats: SearchStats | None = None,
           tally: GuardTally | None = None) -> Result | None:
    """Run seeds in order (see ``run_seeds``) and return the first failing result, which has the smallest
    failing seed of those run (every seed below it has run), or None. With a ``tally`` the guards are
    counted and every seed of the budget runs (see the module docstring)."""
    stats = stats if stats is not None else SearchStats()
    start = time.monotonic()
    found = None
    for result in run_seeds(first_seed, count, options, workers, time_limit_s, count_guards=tally is not None):
        stats.schedules += 1
        stats.truncated += result.truncated
        stats.steps += result.steps
        stats.sim_ms += result.sim_ms
        if tally is not None:
            tally.add(result.seed, result.guards or {}, result.finding is not None)
        if result.finding is not None and found is None:
            found = result
            if tally is None:
                break
    stats.wall_s = time.monotonic() - start
    return found


def _seeds(first: int, count: int | None) -> Iterator[int]:
    seed = first
    while count is None or seed < first + count:
        yield seed
        seed += 1
