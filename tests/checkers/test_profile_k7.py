"""The guarantee profile and K7: a traced unclean recovery after enough lossy faults is possible data loss."""

from __future__ import annotations

from checkers.queue.profiles import derive_profile
from harness.checked_spec import CheckedSpec

SPEC = {"acks": "all", "variant": "kip966", "min_isr": 2, "nemesis": ["crash-lossy"],
        "replica_lag_time_max_ms": 1000}


def lossy(node: str, start_s: float, end_s: float) -> list[dict]:
    """A crash-lossy op on one node that dropped bytes, restarting it within the op."""
    value = {"nodes": [node], "effective": True, "dropped_bytes": {node: 10}}
    return [{"type": "invoke", "process": "nemesis", "f": "crash-lossy", "time": int(start_s * 1e9), "value": {}},
            {"type": "ok", "process": "nemesis", "f": "crash-lossy", "time": int(end_s * 1e9), "value": value}]


def loss(spec: CheckedSpec, ops: list[dict]) -> str:
    return derive_profile(spec, ops, has_final=True)["statuses"]["lost-write"]


def test_a_traced_recovery_after_min_isr_lossy_faults_allows_loss():
    # Two lossy crashes far apart: the windows never overlap, so without a recovery loss is forbidden.
    ops = lossy("b1", 1, 2) + lossy("b2", 30, 31)
    spec = CheckedSpec.of(SPEC)
    assert loss(spec, ops) == "forbidden"
    observed = spec.observed([{"kind": "unclean_recovery"}, {"kind": "leo"}])
    assert observed.unclean_recoveries == 1 and loss(observed, ops) == "allowed"


def test_a_recovery_after_fewer_lossy_faults_than_min_isr_still_forbids_loss():
    # K8: with at most MinISR - 1 members that lost data, the most complete member holds every write.
    spec = CheckedSpec.of(SPEC).observed([{"kind": "unclean_recovery"}])
    assert loss(spec, lossy("b1", 1, 2)) == "forbidden"


def test_the_observation_is_never_read_from_a_stored_spec():
    assert CheckedSpec.of({**SPEC, "unclean_recoveries": 5}).unclean_recoveries == 0
