"""Running mutants against the simulator: each in its own forked process, within a time budget.

A mutant runs in a child process forked from the parent (which has imported the core and the simulator
once), so whatever a mutant does to the core's module state dies with the child and cannot leak into the
next mutant. The child swaps the mutant in (``apply``) and runs schedules of the fixed sequence
``seed_at`` (KIP-966 and v3.5, each with all-at-once and with KIP-435 incremental reassignment, in turn)
until one breaks a rule or its time is up. A finding counts only if
the same seed is clean without the mutant: the child re-runs that seed on the restored core, and skips the
seed when the unmutated core breaks a rule there too (the core has rare findings of its own).

Budget: mutants on lines no baseline run executes are "not exercised" and not run. The others run in
rounds: the first gives each an equal share of a part of the budget; later rounds split what is left
among the survivors, each resuming at the seed where it stopped, until the budget is spent or every
survivor has had ``max_per_mutant_s``. A child that does not answer within its time plus a grace period
is stuck in one schedule (an endless loop in the mutated code) and is reported as a hang. Mutants the
budget never reached are reported as "not run", never as survivors.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

import reference_impl.protocol
from simulator.mutation.apply import NotApplicable, applied
from simulator.mutation.coverage import line_coverage
from simulator.mutation.operators import Mutant, mutants_of, prepare
from simulator.options import VARIANTS, SimOptions
from simulator.runner import Result, run_schedule, simulate
from simulator.schedule import generate

PROTOCOL_DIR = os.path.dirname(os.path.abspath(reference_impl.protocol.__file__))
REPO_DIR = os.path.dirname(os.path.dirname(PROTOCOL_DIR))
DETECTED, SURVIVED, NO_DIFFERENCE, NOT_EXERCISED, NOT_APPLICABLE, HANG, NOT_RUN = (
    "detected", "survived", "no difference", "not exercised", "not applicable", "hang", "not run")
COMPARED_SCHEDULES = 8
HANG_GRACE_S = 20.0
# The cluster settings the seed sequence cycles through: both variants with the defaults, then both with
# KIP-435 incremental reassignment on four brokers (so a reassignment can move a replica to a new broker).
_OPTIONS = {
    **{variant: SimOptions(variant=variant) for variant in VARIANTS},
    **{f"{variant}+incremental": SimOptions(variant=variant, reassignment_mode="incremental", brokers=4)
       for variant in VARIANTS},
}
_PROFILES = ("kip966", "v3.5", "kip966+incremental", "v3.5+incremental")
_CONTEXT = multiprocessing.get_context("fork")
# the unmutated core's fingerprints of the compared schedules, computed once by the parent before it forks
_BASELINE: dict[tuple[str, int], str] = {}


def seed_at(index: int) -> tuple[str, int]:
    """The ``index``-th schedule of the sequence every mutant runs: (settings, seed), the settings named
    by ``_PROFILES`` in turn (KIP-966 first)."""
    return _PROFILES[index % len(_PROFILES)], index // len(_PROFILES)


def core_mutants(directory: str = PROTOCOL_DIR) -> list[Mutant]:
    """Every mutant of every module of the protocol core, in file order (deterministic)."""
    mutants: list[Mutant] = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, REPO_DIR)
            module = relative[:-3].replace(os.sep, ".")
            with open(path, encoding="utf-8") as fh:
                mutants.extend(mutants_of(fh.read(), relative, module))
    return mutants


@dataclass
class Outcome:
    """What happened to one mutant."""

    mutant: Mutant
    status: str
    rule: str | None = None          # the invariant or check that caught it
    variant: str | None = None
    seed: int | None = None
    seconds: float = 0.0             # wall time of its runs until detection (or all of them)
    schedules: int = 0               # schedules run, the baseline re-runs not counted
    next_index: int = 0              # where the next round resumes in the seed sequence
    detail: str = ""


@dataclass
class Campaign:
    """The settings of a self-test over core mutants."""

    budget_s: float = 600.0
    workers: int = 2
    max_per_mutant_s: float = 60.0
    coverage_seeds: int = 100        # per cluster setting of the sequence, for the "not exercised" judgement
    first_round_share: float = 0.4
    progress: Callable[[str], None] | None = field(default=None, repr=False)


def baseline_lines(seeds_per_setting: int, workers: int) -> dict[str, set[int]]:
    """Lines of the core executed by the unmutated simulator on the first schedules of the sequence,
    ``seeds_per_setting`` for each of its cluster settings."""
    total = len(_PROFILES) * seeds_per_setting
    chunks = [[seed_at(i) for i in range(w, total, workers)] for w in range(workers)]
    with _CONTEXT.Pool(workers) as pool:
        parts = pool.map(_covered, chunks)
    merged: dict[str, set[int]] = {}
    for part in parts:
        for filename, lines in part.items():
            merged.setdefault(filename, set()).update(lines)
    return merged


def _covered(schedules: list[tuple[str, int]]) -> dict[str, set[int]]:
    with line_coverage(PROTOCOL_DIR) as hits:
        for variant, seed in schedules:
            simulate(seed, _OPTIONS[variant])
    return hits


def exercised(mutant: Mutant, lines: dict[str, set[int]]) -> bool:
    """True iff a baseline run executed a line of the mutated expression or statement."""
    hit = lines.get(os.path.join(REPO_DIR, mutant.path), set())
    return any(line in hit for line in range(mutant.line, mutant.end_line + 1))


def run_campaign(mutants: list[Mutant], campaign: Campaign) -> list[Outcome]:
    """Judge every mutant (see the module docstring); outcomes in the mutants' order."""
    started = time.monotonic()
    say = campaign.progress or (lambda _: None)
    lines = baseline_lines(campaign.coverage_seeds, campaign.workers)
    say(f"baseline coverage: {sum(len(v) for v in lines.values())} lines of the core executed "
        f"in {len(_PROFILES) * campaign.coverage_seeds} schedules ({time.monotonic() - started:.1f} s)")
    sources = {m.path: _read(m.path) for m in mutants}
    for source in sources.values():
        prepare(source)
    for index in range(COMPARED_SCHEDULES):
        _BASELINE[seed_at(index)] = _fingerprint(*seed_at(index))
    outcomes = [Outcome(m, SURVIVED) if exercised(m, lines) else Outcome(m, NOT_EXERCISED) for m in mutants]
    pending = [o for o in outcomes if o.status == SURVIVED]
    for round_number in (1, 2, 3):
        left = campaign.budget_s - (time.monotonic() - started)
        if not pending or left <= 1:
            break
        share = campaign.first_round_share if round_number == 1 else 1.0
        slice_s = left * share * campaign.workers / len(pending)
        say(f"round {round_number}: {len(pending)} mutants, up to {slice_s:.2f} s each")
        jobs = [(o, min(slice_s, campaign.max_per_mutant_s - o.seconds)) for o in pending]
        _run_round([(o, s) for o, s in jobs if s > 0.05], sources, campaign.workers,
                   deadline=started + campaign.budget_s)
        pending = [o for o in pending if o.status == SURVIVED and o.seconds < campaign.max_per_mutant_s - 0.05]
    for outcome in outcomes:
        if outcome.status == SURVIVED and outcome.schedules == 0:
            outcome.status, outcome.detail = NOT_RUN, "the budget ran out before it started"
    return outcomes


def _read(path: str) -> str:
    with open(os.path.join(REPO_DIR, path), encoding="utf-8") as fh:
        return fh.read()


def _run_round(jobs: list[tuple[Outcome, float]], sources: dict[str, str], workers: int,
               deadline: float) -> None:
    queue: Iterator[tuple[Outcome, float]] = iter(jobs)
    running: dict[Connection, tuple[Outcome, multiprocessing.process.BaseProcess, float]] = {}
    while True:
        while len(running) < workers and time.monotonic() < deadline:
            job = next(queue, None)
            if job is None:
                break
            outcome, seconds = job
            reader, writer = _CONTEXT.Pipe(duplex=False)
            child = _CONTEXT.Process(target=_child, args=(outcome.mutant, sources[outcome.mutant.path],
                                                          outcome.next_index, seconds, writer), daemon=True)
            child.start()
            writer.close()
            running[reader] = (outcome, child, time.monotonic() + seconds + HANG_GRACE_S)
        if not running:
            return
        now = time.monotonic()
        ready = wait(list(running), timeout=max(0.0, min(limit for _, _, limit in running.values()) - now))
        for reader in ready:
            outcome, child, _ = running.pop(reader)
            try:
                _merge(outcome, reader.recv())
            except EOFError:
                outcome.status, outcome.detail = HANG, f"the child died (exit code {child.exitcode})"
            child.join()
            reader.close()
        for reader, (outcome, child, limit) in list(running.items()):
            if time.monotonic() > limit:
                child.kill()
                child.join()
                reader.close()
                del running[reader]
                outcome.status = HANG
                outcome.detail = f"one schedule ran over {HANG_GRACE_S:.0f} s (an endless loop in the mutated code)"
                outcome.seconds += HANG_GRACE_S


def _merge(outcome: Outcome, answer: dict) -> None:
    outcome.seconds += answer["seconds"]
    outcome.schedules += answer["schedules"]
    outcome.next_index = answer["next_index"]
    for name in ("status", "rule", "variant", "seed", "detail"):
        if answer.get(name) is not None:
            setattr(outcome, name, answer[name])


def _child(mutant: Mutant, source: str, first_index: int, seconds: float, writer: Connection) -> None:
    writer.send(judge(mutant, source, first_index, seconds))
    writer.close()


def judge(mutant: Mutant, source: str, first_index: int, seconds: float) -> dict:
    """Run ``mutant`` (in this process) on the seed sequence from ``first_index`` for up to ``seconds``;
    the answer is a dict of ``Outcome`` fields. Restores the core before returning."""
    started = time.monotonic()
    index, schedules = first_index, 0
    while time.monotonic() - started < seconds:
        try:
            with applied(mutant, source):
                result = None
                while result is None and time.monotonic() - started < seconds:
                    variant, seed = seed_at(index)
                    result = simulate(seed, _OPTIONS[variant])
                    index += 1
                    schedules += 1
                    if result.finding is None:
                        result = None
        except NotApplicable as exc:
            return {"seconds": 0.0, "schedules": 0, "next_index": index, "status": NOT_APPLICABLE,
                    "detail": str(exc)}
        if result is None:
            break
        # the core restored: a seed on which it breaks a rule by itself says nothing about the mutant
        if simulate(result.seed, result.schedule.options).finding is None:
            return _answer(started, schedules, index, DETECTED, result)
    answer = _answer(started, schedules, index, SURVIVED, None)
    differs = first_difference(mutant, source)
    if differs is None:
        answer.update(status=NO_DIFFERENCE, detail=f"trace and history equal the core's on the first "
                                                   f"{COMPARED_SCHEDULES} schedules")
    else:
        answer.update(detail=f"behaviour differs from the core's ({differs[0]} seed {differs[1]}), "
                             f"no rule broken")
    return answer


def first_difference(mutant: Mutant, source: str) -> tuple[str, int] | None:
    """The first of the first ``COMPARED_SCHEDULES`` schedules whose trace or client history differs
    between the mutant and the core, or None (the mutant is then probably equivalent)."""
    schedules = [seed_at(i) for i in range(COMPARED_SCHEDULES)]
    with applied(mutant, source):
        mutated = [_fingerprint(variant, seed) for variant, seed in schedules]
    for schedule, fingerprint in zip(schedules, mutated, strict=True):
        if (_BASELINE.get(schedule) or _fingerprint(*schedule)) != fingerprint:
            return schedule
    return None


def _fingerprint(variant: str, seed: int) -> str:
    result = run_schedule(generate(seed, _OPTIONS[variant]), keep_trace=True)
    text = json.dumps([result.trace, result.ops, result.finding and result.finding.rule], sort_keys=True,
                      default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _answer(started: float, schedules: int, index: int, status: str, result: Result | None) -> dict:
    answer = {"seconds": time.monotonic() - started, "schedules": schedules, "next_index": index,
              "status": status}
    if result is not None and result.finding is not None:
        options = result.schedule.options
        settings = options.variant + ("+incremental" if options.reassignment_mode == "incremental" else "")
        answer.update(rule=result.finding.rule, variant=settings, seed=result.seed,
                      detail=result.finding.detail[:160])
    return answer
