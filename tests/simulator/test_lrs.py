"""Last Replica Standing (docs/protocol-rules.md 5.1) is found by the simulator on v3.5 and not on KIP-966.

A bounded search over a fixed seed range: on v3.5 it must end with a violation of the loss family (the
invariants LRS breaks: a leader or ISR member missing committed data, an acknowledged write gone); the
shrunk schedule must still contain what LRS is made of (a crash that loses unflushed writes) and must be
harmless on KIP-966; on KIP-966 no schedule of the range may break a loss-family invariant.
"""

from __future__ import annotations

from simulator import Schedule, SimOptions, run_schedule, search, shrink, simulate
from simulator.monitor import Monitor

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



def _history(losses: list[tuple[str, str]]) -> list[dict]:
    """Two acknowledged writes to partition 0, the nemesis ops ``(f, node)`` in order, then a final read
    that returns only the first write."""
    ops: list[dict] = []

    def op(type_, process, f, value, final=False):
        ops.append({"index": len(ops), "time": (len(ops) + 1) * 10_000_000, "type": type_, "process": process,
                    "f": f, "value": value, **({"final": True} if final else {})})

    for process, value in ((1, 1), (2, 2)):
        op("invoke", process, "send", [0, value])
        op("ok", process, "send", [0, [value - 1, value]])
    for f, node in losses:
        op("invoke", "nemesis", f, None)
        op("ok", "nemesis", f, {"nodes": [node], "effective": True})
    op("invoke", 3, "poll", None, final=True)
    op("ok", 3, "poll", {0: [[0, 1]]}, final=True)
    return ops


def test_a_loss_beyond_kip966s_tolerance_is_allowed_not_a_finding():
    # two replicas (MinISR 2) lose unflushed writes before either restarts: KIP-966 does not promise to
    # survive that (K6), so the acknowledged write that is gone is allowed, not a finding
    monitor = Monitor({"variant": "kip966", "min_isr": 2, "topic": "sim", "replica_lag_time_max_ms": 1000})
    ops = _history([("lose-unsynced", "2"), ("lose-unsynced", "3"), ("start", "2"), ("start", "3")])
    assert monitor.loss_status(ops) == "allowed"
    assert monitor.history_finding(ops, step=1, time_ms=1) is None
    verdict = monitor.sweep.verdict(ops, loss_status="allowed")
    assert verdict["invariants"]["I6"]["valid"] is False  # the write is gone, and the profile says why
    assert verdict["invariants"]["I6"]["status"] == "allowed"


def test_sequential_losses_stay_forbidden_and_the_lost_write_is_a_finding():
    monitor = Monitor({"variant": "kip966", "min_isr": 2, "topic": "sim", "replica_lag_time_max_ms": 1})
    ops = _history([("lose-unsynced", "2"), ("start", "2"), ("lose-unsynced", "3"), ("start", "3")])
    assert monitor.loss_status(ops) == "forbidden"
    finding = monitor.history_finding(ops, step=1, time_ms=1)
    assert finding is not None and finding.rule == "I6", finding
