"""Running mutants against the simulator: each in its own forked process, within a time budget.

A mutant runs in a child process forked from the parent (which has imported the core and the simulator
once), so whatever a mutant does to the core's module state dies with the child and cannot leak into the
next mutant. The child swaps the mutant in (``apply``) and runs schedules of the fixed sequence
``seed_at`` (KIP-966 and v3.5, each with all-at-once and with KIP-435 incremental reassignment, then each
on a quorum of three controllers, in turn; a mutant of the quorum's own code runs quorum settings only, a
mutant of the idempotent producer state settings with idempotent producers only) until one breaks a rule or
its time is up. A finding counts only if
the same seed is clean without the mutant: the child re-runs that seed on the restored core, and skips the
seed when the unmutated core breaks a rule there too (the core has rare findings of its own).

Equivalence has to be shown, not assumed. The parent first runs the unmutated core on the first schedules of
both sequences (``Evidence``: each schedule's fingerprint of trace, client history and finding, and the
lines of the core it executed). A mutant only changes a schedule that executes its lines (until then the
run is the core's, step for step), so the child runs the mutant on exactly those schedules; past the
precomputed ones it runs the mutant traced on the mutated function alone and makes the core's run of the
schedule only when the mutated lines ran (to confirm a finding or compare fingerprints). A mutant is **equivalent** only when ``EQUIVALENCE_SCHEDULES`` (200) schedules that execute
its lines, steered ones included, leave trace and history identical to the core's; a mutant that is not
detected and not shown equivalent **survived** and counts against the rate, whether its behaviour was seen
to differ or not, and so does a mutant that no baseline schedule executes (**not exercised**).

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
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any

import reference_impl.protocol
from simulator import steer
from simulator.guards import core_guards, core_modules
from simulator.mutation.apply import NotApplicable, applied
from simulator.mutation.coverage import line_coverage
from simulator.mutation.operators import Mutant, mutants_of, prepare
from simulator.options import VARIANTS, SimOptions
from simulator.runner import Result, run_schedule
from simulator.schedule import Schedule, generate

PROTOCOL_DIR = os.path.dirname(os.path.abspath(reference_impl.protocol.__file__))
REPO_DIR = os.path.dirname(os.path.dirname(PROTOCOL_DIR))
DETECTED, SURVIVED, EQUIVALENT, NOT_EXERCISED, NOT_APPLICABLE, HANG, NOT_RUN = (
    "detected", "survived", "equivalent", "not exercised", "not applicable", "hang", "not run")
EQUIVALENCE_SCHEDULES = 200
HANG_GRACE_S = 20.0
# The cluster settings the seed sequence cycles through: both variants with the defaults, then both with
# KIP-435 incremental reassignment on four brokers (so a reassignment can move a replica to a new broker),
# then both on a quorum of three controllers (fail-overs, quorum faults: the Raft core's mutants).
_OPTIONS = {
    **{variant: SimOptions(variant=variant) for variant in VARIANTS},
    **{f"{variant}+incremental": SimOptions(variant=variant, reassignment_mode="incremental", brokers=4)
       for variant in VARIANTS},
    **{f"{variant}+quorum": SimOptions(variant=variant, controllers=3) for variant in VARIANTS},
}
_PROFILES = ("kip966", "v3.5", "kip966+incremental", "v3.5+incremental", "kip966+quorum", "v3.5+quorum")
# Mutants of the quorum's own modules (raft/, quorum_controller) run a sequence of quorum settings only:
# a single controller never elects, fails over or truncates, so those schedules cannot tell them apart.
_OPTIONS["kip966+quorum-no-pre-vote"] = SimOptions(variant="kip966", controllers=3, pre_vote=False)
_QUORUM_PROFILES = ("kip966+quorum", "kip966+quorum-no-pre-vote", "v3.5+quorum")
# Mutants of the idempotent producer state (producer_state.py) run settings whose clients write as
# idempotent producers (SimOptions.idempotent): the plain clients send no producer id, so no other schedule
# runs that code past its first test.
_OPTIONS["kip966+idempotent"] = SimOptions(variant="kip966", idempotent=True)
_OPTIONS["v3.5+idempotent"] = SimOptions(variant="v3.5", idempotent=True)
_IDEMPOTENT_PROFILES = ("kip966+idempotent", "v3.5+idempotent")
MAIN, QUORUM, IDEMPOTENT = "main", "quorum", "idempotent"
_SEQUENCES = {MAIN: _PROFILES, QUORUM: _QUORUM_PROFILES, IDEMPOTENT: _IDEMPOTENT_PROFILES}
_CONTEXT = multiprocessing.get_context("fork")
# the unmutated core's runs of the first schedules of each sequence (``_SEQUENCES``), computed once by the
# parent before it forks its children
_EVIDENCE: dict[str, list[Evidence]] = {name: [] for name in _SEQUENCES}


def _sequence_name(sequence: bool | str) -> str:
    """A sequence's name; ``True`` and ``False`` stand for the quorum's and the main one (older callers)."""
    if isinstance(sequence, bool):
        return QUORUM if sequence else MAIN
    return sequence


def seed_at(index: int, quorum: bool | str = False) -> tuple[str, int]:
    """The ``index``-th schedule of the sequence a mutant runs: (settings, seed), the settings named by
    ``_PROFILES`` in turn (KIP-966 first), by ``_QUORUM_PROFILES`` for a mutant of the quorum (``quorum``
    True or ``"quorum"``), by ``_IDEMPOTENT_PROFILES`` for one of the producer state (``"idempotent"``)."""
    profiles = _SEQUENCES[_sequence_name(quorum)]
    return profiles[index % len(profiles)], index // len(profiles)


def quorum_mutant(mutant: Mutant) -> bool:
    """A mutant of the controller quorum's own code (``raft/``, ``quorum_controller``)."""
    path = mutant.path.replace(os.sep, "/")
    return "/raft/" in path or path.endswith("/quorum_controller.py")


def idempotent_mutant(mutant: Mutant) -> bool:
    """A mutant of the idempotent producer state (``producer_state.py``)."""
    return mutant.path.replace(os.sep, "/").endswith("/producer_state.py")


def sequence_of(mutant: Mutant) -> str:
    """The name of the sequence of settings ``mutant`` runs (``_SEQUENCES``)."""
    if quorum_mutant(mutant):
        return QUORUM
    return IDEMPOTENT if idempotent_mutant(mutant) else MAIN


def core_mutants(directory: str = PROTOCOL_DIR) -> list[Mutant]:
    """Every mutant of every module of the protocol core, its subpackages (``control``) included, in file
    order (deterministic)."""
    mutants: list[Mutant] = []
    for path in core_modules(directory):
        relative = os.path.relpath(path, REPO_DIR)
        module = relative[:-3].replace(os.sep, ".")
        if module.endswith(".__init__"):
            module = module[:-len(".__init__")]
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
    identical: int = 0               # schedules that execute its lines and left trace and history unchanged
    differs: str | None = None       # the first schedule whose trace or history it changed (no rule broken)


@dataclass
class Campaign:
    """The settings of a self-test over core mutants."""

    budget_s: float = 600.0
    workers: int = 2
    max_per_mutant_s: float = 60.0
    coverage_seeds: int = 40         # per cluster setting of the sequence: the baseline's schedules (Evidence)
    first_round_share: float = 0.4
    progress: Callable[[str], None] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Evidence:
    """The unmutated core's run of one schedule of a sequence: its fingerprint, whether it broke a rule by
    itself, and the lines of the core it executed ({absolute file: lines})."""

    fingerprint: str
    finding: bool
    lines: dict[str, frozenset[int]]

    def executes(self, mutant: Mutant) -> bool:
        """Whether this run executed a line of the mutated expression or statement."""
        hit = self.lines.get(os.path.join(REPO_DIR, mutant.path))
        return hit is not None and any(line in hit for line in range(mutant.line, mutant.end_line + 1))


def baseline_evidence(seeds_per_setting: int, workers: int, quorum: bool | str) -> list[Evidence]:
    """The core's runs of the first ``seeds_per_setting`` x (settings of the sequence) schedules (``quorum``:
    the sequence, as ``seed_at`` takes it)."""
    sequence = _sequence_name(quorum)
    total = len(_SEQUENCES[sequence]) * seeds_per_setting
    chunks = [[(i, sequence) for i in range(w, total, workers)] for w in range(workers)]
    with _CONTEXT.Pool(workers) as pool:
        parts = pool.map(_evidence_of, chunks)
    merged: dict[int, Evidence] = {}
    for part in parts:
        merged.update(part)
    return [merged[i] for i in range(total)]


def _evidence_of(indexes: list[tuple[int, str]]) -> dict[int, Evidence]:
    out = {}
    for index, sequence in indexes:
        variant, seed = seed_at(index, sequence)
        with line_coverage(PROTOCOL_DIR) as hits:
            result = run_schedule(generate(seed, _OPTIONS[variant]), keep_trace=True)
        out[index] = Evidence(_fingerprint_of(result), result.finding is not None,
                              {f: frozenset(lines) for f, lines in hits.items()})
    return out


def baseline_lines(seeds_per_setting: int, workers: int) -> dict[str, set[int]]:
    """Lines of the core executed by the unmutated simulator on the first schedules of the sequence,
    ``seeds_per_setting`` for each of its cluster settings."""
    merged: dict[str, set[int]] = {}
    for evidence in baseline_evidence(seeds_per_setting, workers, MAIN):
        for filename, lines in evidence.lines.items():
            merged.setdefault(filename, set()).update(lines)
    return merged


def exercised(mutant: Mutant, lines: dict[str, set[int]]) -> bool:
    """True iff a baseline run executed a line of the mutated expression or statement."""
    hit = lines.get(os.path.join(REPO_DIR, mutant.path), set())
    return any(line in hit for line in range(mutant.line, mutant.end_line + 1))


def guard_firings(evidence: list[Evidence]) -> dict[str, int]:
    """For each guard of the core (by name), in how many of these runs its body ran."""
    out = {}
    for guard in core_guards():
        out[guard.name] = sum(1 for e in evidence if guard.body_line in e.lines.get(guard.module_file, ()))
    return out


def run_campaign(mutants: list[Mutant], campaign: Campaign) -> list[Outcome]:
    """Judge every mutant (see the module docstring); outcomes in the mutants' order."""
    started = time.monotonic()
    say = campaign.progress or (lambda _: None)
    for quorum in (False, True):
        steer.aims(quorum)  # the guard table behind the steered schedules, built once before any fork
    for sequence in _SEQUENCES:
        if any(sequence_of(m) == sequence for m in mutants):
            _EVIDENCE[sequence] = baseline_evidence(campaign.coverage_seeds, campaign.workers, sequence)
        else:
            _EVIDENCE[sequence] = []
    say(f"baseline: the core's runs of {len(_EVIDENCE[MAIN])} + {len(_EVIDENCE[QUORUM])} (quorum) + "
        f"{len(_EVIDENCE[IDEMPOTENT])} (idempotent) schedules with their lines and fingerprints "
        f"({time.monotonic() - started:.1f} s)")
    sources = {m.path: _read(m.path) for m in mutants}
    for source in sources.values():
        prepare(source)
    outcomes = [Outcome(m, SURVIVED) if any(e.executes(m) for e in _EVIDENCE[sequence_of(m)])
                else Outcome(m, NOT_EXERCISED, detail="no baseline schedule executes its lines") for m in mutants]
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
        if outcome.status == SURVIVED and outcome.schedules == 0 and outcome.identical == 0:
            outcome.status, outcome.detail = NOT_RUN, "the budget ran out before it started"
    return outcomes


def baseline_guard_table() -> tuple[int, dict[str, int]]:
    """The schedules of the main sequence's baseline and, per guard, in how many of them it fired (for the
    self-test's guard table; empty before a campaign ran)."""
    return len(_EVIDENCE[MAIN]), guard_firings(_EVIDENCE[MAIN]) if _EVIDENCE[MAIN] else {}


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
                                                          outcome.next_index, seconds, writer,
                                                          outcome.identical, outcome.differs), daemon=True)
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
    outcome.identical = answer.get("identical", outcome.identical)
    outcome.differs = answer.get("differs", outcome.differs)
    for name in ("status", "rule", "variant", "seed", "detail"):
        if answer.get(name) is not None:
            setattr(outcome, name, answer[name])


def _child(mutant: Mutant, source: str, first_index: int, seconds: float, writer: Connection,
           identical: int = 0, differs: str | None = None) -> None:
    writer.send(judge(mutant, source, first_index, seconds, identical, differs))
    writer.close()


def judge(mutant: Mutant, source: str, first_index: int, seconds: float, identical: int = 0,
          differs: str | None = None, equivalence: int = EQUIVALENCE_SCHEDULES) -> dict:
    """Run ``mutant`` (in this process) on the schedules of its sequence from ``first_index`` that execute
    its lines, for up to ``seconds``; the answer is a dict of ``Outcome`` fields (see the module docstring
    for detected, equivalent and survived). ``identical`` and ``differs`` carry over from earlier rounds.
    Restores the core before returning."""
    started = time.monotonic()
    index, schedules = first_index, 0
    sequence = sequence_of(mutant)
    evidence = _EVIDENCE[sequence]
    try:
        with applied(mutant, source):
            pass
    except NotApplicable as exc:
        return {"seconds": 0.0, "schedules": 0, "next_index": index, "status": NOT_APPLICABLE, "detail": str(exc)}
    while time.monotonic() - started < seconds:
        variant, seed = seed_at(index, sequence)
        schedule = generate(seed, _OPTIONS[variant])
        index += 1
        core = evidence[index - 1] if index - 1 < len(evidence) else None
        if core is not None and not core.executes(mutant):
            continue  # the mutant's run is the core's, step for step
        with applied(mutant, source):
            result, executed = _run_watching(mutant, schedule, watch=core is None)
        schedules += 1
        if not executed:
            continue  # past the baseline: the mutated lines never ran, so this was the core's run
        if result.finding is not None:
            core_broke = core.finding if core is not None else run_schedule(schedule).finding is not None
            if not core_broke:
                return {**_answer(started, schedules, index, DETECTED, result), "identical": identical,
                        "differs": differs}
            continue  # the core breaks a rule there by itself: says nothing about the mutant
        core_print = core.fingerprint if core is not None else _fingerprint_of(run_schedule(schedule, keep_trace=True))
        if _fingerprint_of(result) == core_print:
            identical += 1
        elif differs is None:
            differs = f"{variant} seed {seed}"
        if differs is None and identical >= equivalence:
            answer = _answer(started, schedules, index, EQUIVALENT, None)
            answer.update(identical=identical, differs=None,
                          detail=f"trace and history equal the core's on {identical} schedules that execute it")
            return answer
    answer = _answer(started, schedules, index, SURVIVED, None)
    answer.update(identical=identical, differs=differs)
    if differs is not None:
        answer["detail"] = f"behaviour differs from the core's ({differs}), no rule broken"
    else:
        answer["detail"] = (f"no rule broken; trace and history equal the core's on {identical} schedules that "
                            f"execute it, fewer than the {equivalence} that make it equivalent")
    return answer


def _run_watching(mutant: Mutant, schedule: Schedule, watch: bool) -> tuple[Result, bool]:
    """Run ``schedule`` (trace kept) and say whether a mutated line ran: with ``watch`` traced on the mutated
    function's code only, which keeps the cost low; without, the caller already knows it does."""
    if not watch:
        return run_schedule(schedule, keep_trace=True), True
    filename = os.path.join(REPO_DIR, mutant.path)
    qualname = mutant.function
    wanted = range(mutant.line, mutant.end_line + 1)
    hit: list[bool] = []

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno in wanted:
            hit.append(True)
            return None
        return local

    def hook(frame: FrameType, event: str, arg: Any) -> Any:
        if hit:
            return None
        code = frame.f_code
        name = code.co_qualname
        if code.co_filename == filename and (name == qualname or name.startswith(qualname + ".")):
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(hook)
    try:
        result = run_schedule(schedule, keep_trace=True)
    finally:
        sys.settrace(previous)
    return result, bool(hit)


def _fingerprint(variant: str, seed: int) -> str:
    return _fingerprint_of(run_schedule(generate(seed, _OPTIONS[variant]), keep_trace=True))


def _fingerprint_of(result: Result) -> str:
    text = json.dumps([result.trace, result.ops, result.finding and result.finding.rule], sort_keys=True,
                      default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _answer(started: float, schedules: int, index: int, status: str, result: Result | None) -> dict:
    answer = {"seconds": time.monotonic() - started, "schedules": schedules, "next_index": index,
              "status": status}
    if result is not None and result.finding is not None:
        options = result.schedule.options
        settings = options.variant + ("+incremental" if options.reassignment_mode == "incremental" else "") + \
            ("+quorum" if options.controllers > 1 else "") + ("" if options.pre_vote else "-no-pre-vote") + \
            ("+idempotent" if options.idempotent else "")
        answer.update(rule=result.finding.rule, variant=settings, seed=result.seed,
                      detail=result.finding.detail[:160])
    return answer
