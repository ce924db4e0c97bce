"""The simulator checks with the checkers' definitions: its trace and history, handed to
``check_invariants`` afterwards, give the verdict it reached step by step; and its nodes' trace is the
servers' trace (same kinds, same attributes for the events the invariants read)."""

from __future__ import annotations

import random

from checkers.invariants import check_invariants
from simulator import SimOptions, generate, run_schedule
from simulator.network import LinkFault, Network


def test_the_step_by_step_verdict_is_the_checkers_verdict_on_the_whole_run():
    for variant, seed in (("v3.5", 1), ("kip966", 4)):
        result = run_schedule(generate(seed, SimOptions(variant=variant)), keep_trace=True)
        spec = {"variant": variant, "min_isr": 2, "topic": "sim"}
        verdict = check_invariants(spec, result.ops, result.trace)
        if result.finding is None:
            assert verdict["violated"] == [], verdict["violated"]
            assert verdict["invariants"]["I2"]["valid"] is True and verdict["invariants"]["I11"]["valid"] is True
        else:
            assert result.finding.rule in verdict["violated"]


def test_trace_events_carry_what_the_invariants_read():
    result = run_schedule(generate(2, SimOptions(variant="kip966")), keep_trace=True)
    kinds = {ev["kind"] for ev in result.trace}
    assert {"registered", "unfenced", "metadata_applied", "leader_epoch_start", "hwm", "leo", "role"} <= kinds
    controller = [ev for ev in result.trace if ev.get("source") == "controller" and ev["kind"] == "metadata_applied"]
    assert controller and all({"isr", "elr", "leader", "leader_epoch", "partition_epoch", "topic"} <= set(ev)
                              for ev in controller)
    assert all(isinstance(ev["time"], int) for ev in result.trace)
    assert [ev["time"] for ev in result.trace] == sorted(ev["time"] for ev in result.trace)


def test_network_cuts_drop_on_arrival_and_faults_reorder_and_duplicate():
    net = Network(random.Random(1))
    net.cut(1, 2, oneway=True)
    assert net.is_cut(1, 2) and not net.is_cut(2, 1)
    net.uncut(1, 2, oneway=True)
    assert not net.is_cut(1, 2)
    net.set_fault(1, 2, LinkFault(drop=0.0, dup=1.0, delay=50))
    assert all(len(net.delays(2, 1)) == 2 for _ in range(20))
    net.set_fault(1, 2, LinkFault(drop=1.0, dup=0.0, delay=0))
    assert net.delays(1, 2) == []
    net.heal()
    assert len(net.delays(1, 2)) == 1 and not net.cuts and not net.faults
