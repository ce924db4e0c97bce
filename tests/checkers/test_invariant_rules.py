"""The invariants' rule registry and the sweep's dispatch: every invariant is judged somewhere, and each
event reaches exactly the rules that read its kind, before or after the state takes it as they declare."""

import pytest

import checkers.invariants.checker as checker
from checkers.invariants import NEEDS
from checkers.invariants.events import END, classify
from checkers.invariants.rules import RULES
from simulator import SimOptions
from simulator.runner import run_schedule
from simulator.schedule import generate

HISTORY_INVARIANTS = {"I6", "I7", "I14", "I15"}  # checkers/invariants/history_checks.py


def test_every_invariant_has_a_trace_rule_or_is_judged_from_the_history():
    assert set(RULES) | HISTORY_INVARIANTS == set(NEEDS)
    assert not set(RULES) & HISTORY_INVARIANTS
    assert all(rule.reads for rule in RULES.values())


@pytest.fixture(scope="module")
def traces():
    out = []
    for variant in ("kip966", "v3.5"):
        options = SimOptions(variant=variant)
        for seed in range(4):
            result = run_schedule(generate(seed, options), keep_trace=True)
            out.append(({"variant": variant, "min_isr": options.min_isr}, result.trace))
    return out


def test_each_event_reaches_the_rules_that_read_its_kind_and_no_other(traces, monkeypatch):
    calls = []

    def recording(table, phase):
        return {kind: tuple((inv, _recorder(inv, judge, phase, calls)) for inv, judge in rules)
                for kind, rules in table.items()}

    monkeypatch.setattr(checker, "_BEFORE", recording(checker._BEFORE, "before"))
    monkeypatch.setattr(checker, "_AFTER", recording(checker._AFTER, "after"))
    seen = set()
    for spec, trace in traces:
        sweep = checker.TraceSweep(spec)
        for ev in trace:
            sweep.feed(ev)
            step = classify(ev)
            seen.add(step.kind if step is not None else None)
        sweep.verdict([])
    seen.add(END)
    for inv, kind, phase in calls:
        assert kind in RULES[inv].reads, (inv, kind)
        assert phase == ("before" if RULES[inv].before else "after"), (inv, phase)
    called = {(inv, kind) for inv, kind, _ in calls}
    expected = {(inv, kind) for inv, rule in RULES.items() for kind in rule.reads if kind in seen}
    assert called == expected
    # the simulated traces exercise most of the registry (a kind never traced here, such as isr_rollback,
    # is still read)
    assert len(expected) >= 20


def _recorder(inv, judge, phase, calls):
    def judged(state, step, res, memory):
        calls.append((inv, step.kind, phase))
        return judge(state, step, res, memory)
    return judged

