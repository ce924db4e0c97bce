"""Random valid histories produce no anomaly; mutations of them are caught (tests/support/synth.py)."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.queue import queue_anomalies
from tests.support.synth import MUTATIONS, mutate, synth_history

params = st.fixed_dictionaries({
    "n_ops": st.integers(20, 250),
    "keys": st.integers(1, 5),
    "concurrency": st.integers(1, 8),
    "seed": st.integers(0, 2**31),
    "p_info": st.sampled_from([0.0, 0.05, 0.2]),
    "p_fail": st.sampled_from([0.0, 0.05, 0.2]),
    "p_txn": st.sampled_from([0.0, 0.2, 0.6]),
    "p_gap": st.sampled_from([0.0, 0.3]),
    "batch": st.integers(1, 6),
    "p_reassign": st.sampled_from([0.0, 0.1]),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params)
def test_valid_histories_have_no_anomaly(p):
    ops = synth_history(**p)
    found = {k: v for k, v in queue_anomalies(ops).items() if v}
    assert found == {}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params, st.sampled_from(MUTATIONS), st.integers(0, 1000))
def test_mutations_are_caught(p, kind, mseed):
    ops = synth_history(**p)
    res = mutate(ops, kind, random.Random(mseed))
    if res is None:
        return  # nothing to mutate (e.g. fewer than two ok sends on any key)
    mutated, why = res
    found = {k for k, v in queue_anomalies(mutated).items() if v}
    assert found, f"mutation not caught: {why}"


def test_without_final_phase_only_unseen_may_appear():
    for seed in range(20):
        ops = synth_history(150, seed=seed, final=False)
        found = {k for k, v in queue_anomalies(ops).items() if v}
        assert found <= {"unseen"}


def test_specific_mutations_give_the_expected_kind():
    ops = synth_history(300, seed=7, keys=2, p_gap=0.0)
    swapped, _ = mutate(ops, "swap-offsets", random.Random(1))
    assert queue_anomalies(swapped)["inconsistent-offsets"]
    dup, _ = mutate(ops, "duplicate-value", random.Random(1))
    assert queue_anomalies(dup)["duplicate"]


def test_reassigning_consumers_and_split_final_reads_are_no_anomaly():
    """Consumers that assign/subscribe again (a re-acquired key is read from the start) and a final reader
    that polls twice are what Jepsen's workload does; the v2 checker reported nonmonotonic-poll for the
    first (subscribe was not read) and poll-skip for the second."""
    for seed in range(15):
        ops = synth_history(200, seed=seed, keys=3, p_reassign=0.2, p_txn=0.3)
        assert sum(op["f"] in ("assign", "subscribe") for op in ops) > 4
        assert not {k for k, v in queue_anomalies(ops).items() if v}
        inv, comp = ops[-2], ops[-1]
        assert inv["final"] and comp["final"] and comp["f"] == "poll"
        first = {k: pairs[:len(pairs) // 2] for k, pairs in comp["value"].items()}
        rest = {k: pairs[len(pairs) // 2:] for k, pairs in comp["value"].items()}
        split = ops[:-1] + [dict(comp, value=first), dict(inv, index=comp["index"] + 1),
                            dict(comp, index=comp["index"] + 2, value=rest)]
        assert not {k for k, v in queue_anomalies(split).items() if v}


def test_synth_is_deterministic():
    assert synth_history(100, seed=5) == synth_history(100, seed=5)
