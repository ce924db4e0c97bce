"""Running schedules: one (``run_schedule``), one seed (``simulate``), many seeds (``search``).

``simulate(seed, options)`` is the in-process entry point: it builds the seed's schedule, runs it and
returns a ``Result``; setting up a world costs well under a millisecond, so a caller (a mutation test, a
property test) can run hundreds of seeds against patched protocol code in seconds. ``run_seeds`` runs
seeds in order, on several processes when asked, and yields their results in seed order; ``search`` returns
the first failing one (so the answer does not depend on how the work was split).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

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

    @property
    def seed(self) -> int:
        """The schedule's seed."""
        return self.schedule.seed


def run_schedule(schedule: Schedule, keep_trace: bool = False) -> Result:
    """Run one schedule to its end or its first finding."""
    world = World(schedule, keep_trace=keep_trace).run()
    return Result(schedule, world.finding, world.steps, world.now, world.truncated, world.trace,
                  world.clients.history() if keep_trace else None)


def simulate(seed: int, options: SimOptions | None = None) -> Result:
    """Generate the schedule of ``seed`` and run it."""
    return run_schedule(generate(seed, options or SimOptions()))


@dataclass
class SearchStats:
    """What a search did: schedules run, those cut at ``max_steps``, steps simulated, wall time."""

    schedules: int = 0
    truncated: int = 0
    steps: int = 0
    wall_s: float = 0.0


def _run_seed(args: tuple[int, SimOptions]) -> Result:
    return simulate(*args)


def run_seeds(first_seed: int, count: int | None, options: SimOptions, workers: int = 1,
              time_limit_s: float | None = None) -> Iterator[Result]:
    """The results of seeds ``first_seed, first_seed + 1, ...`` in seed order (``count`` of them, or until
    ``time_limit_s`` has passed when the next seed would start), on ``workers`` processes. Stopping the
    iteration early cancels what has not started."""
    start = time.monotonic()
    seeds = _seeds(first_seed, count)

    def more() -> int | None:
        if time_limit_s is not None and time.monotonic() - start > time_limit_s:
            return None
        return next(seeds, None)

    if workers <= 1:
        while (seed := more()) is not None:
            yield simulate(seed, options)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        pending: list[Any] = []
        try:
            while True:
                while len(pending) < workers * 4 and (seed := more()) is not None:
                    pending.append(pool.submit(_run_seed, (seed, options)))
                if not pending:
                    return
                yield pending.pop(0).result()
        finally:
            for future in pending:
                future.cancel()


def search(first_seed: int, count: int | None, options: SimOptions, workers: int = 1,
           time_limit_s: float | None = None, stats: SearchStats | None = None) -> Result | None:
    """Run seeds in order (see ``run_seeds``) and return the first failing result, which has the smallest
    failing seed of those run (every seed below it has run), or None."""
    stats = stats if stats is not None else SearchStats()
    start = time.monotonic()
    found = None
    for result in run_seeds(first_seed, count, options, workers, time_limit_s):
        stats.schedules += 1
        stats.truncated += result.truncated
        stats.steps += result.steps
        if result.finding is not None:
            found = result
            break
    stats.wall_s = time.monotonic() - start
    return found


def _seeds(first: int, count: int | None) -> Iterator[int]:
    seed = first
    while count is None or seed < first + count:
        yield seed
        seed += 1
