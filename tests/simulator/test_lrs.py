"""Last Replica Standing (docs/protocol-rules.md 5.1) is found by the simulator on v3.5 and not on KIP-966.

A bounded search over a fixed seed range: on v3.5 it must end with a violation of the loss family (the
invariants LRS breaks: a leader or ISR member missing committed data, an acknowledged write gone); the
shrunk schedule must still contain what LRS is made of (a crash that loses unflushed writes) and must be
harmless on KIP-966; on KIP-966 no schedule of the range may break a loss-family invariant.
"""

from __future__ import annotations

from simulator import Schedule, SimOptions, run_schedule, search, shrink, simulate

LOSS_FAMILY = {"I1", "I2", "I6", "I7", "I13", "I15"}
SEEDS = 120


def test_found_on_v35_within_the_seed_range_and_shrunk_to_a_lossy_crash():
    found = search(0, SEEDS, SimOptions(variant="v3.5"))
    assert found is not None and found.finding is not None
    assert found.finding.rule in LOSS_FAMILY, found.finding
    small = shrink(found, max_runs=300)
    assert small.result.finding is not None and small.result.finding.rule == found.finding.rule
    events = small.result.schedule.events
    assert len(events) < len(found.schedule.events)
    assert any(e["do"] == "crash" and e["lossy"] for e in events), events
    on_kip966 = Schedule(found.seed, found.schedule.options.with_(variant="kip966"), events)
    assert run_schedule(on_kip966).finding is None


def test_not_found_on_kip966_in_the_same_seed_range():
    options = SimOptions(variant="kip966")
    for seed in range(SEEDS):
        result = simulate(seed, options)
        assert result.finding is None or result.finding.rule not in LOSS_FAMILY, (seed, result.finding)
