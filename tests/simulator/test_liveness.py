"""The final phase demands progress (a cluster that does not converge after healing is a finding) and a
trace that tells the truth (one that contradicts the nodes' state at the end is a finding).

Patching the core here stands in for a bug that only stops progress (no safety invariant forbids it); the
unpatched core converges on the same schedules.
"""

from __future__ import annotations

import pytest

from reference_impl.protocol import replica as replica_module
from simulator import SimOptions, generate, run_schedule, simulate
from simulator.world import World


def test_the_core_converges_after_every_fault_is_healed_and_its_trace_tells_the_truth():
    for variant in ("kip966", "v3.5"):
        for seed in range(40):
            result = simulate(seed, SimOptions(variant=variant))
            assert result.finding is None or result.finding.rule not in ("liveness", "trace"), (variant, seed,
                                                                                                 result.finding)


def test_a_follower_that_never_rejoins_the_isr_is_a_liveness_finding(monkeypatch):
    monkeypatch.setattr(replica_module.PartitionReplica, "_may_join_isr", lambda self, r, now_ms: False)
    # the first schedule whose faults push a follower out of the ISR (not every seed's faults do)
    found = next((r.finding for r in (simulate(seed, SimOptions(variant="kip966")) for seed in range(12))
                  if r.finding is not None), None)
    assert found is not None and found.rule == "liveness", found
    assert "ISR" in found.detail


def test_a_write_never_acknowledged_after_healing_is_a_liveness_finding(monkeypatch):
    # acks=all writes never complete: the cluster converges but makes no progress
    monkeypatch.setattr(replica_module.PartitionReplica, "drain_completed_acks", lambda self: [])
    result = simulate(0, SimOptions(variant="kip966", faults=()))
    assert result.finding is not None and result.finding.rule == "liveness", result.finding
    assert "did not acknowledge" in result.finding.detail


def test_no_liveness_check_when_converge_ms_is_zero(monkeypatch):
    monkeypatch.setattr(replica_module.PartitionReplica, "_may_join_isr", lambda self, r, now_ms: False)
    result = simulate(3, SimOptions(variant="kip966", converge_ms=0))
    assert result.finding is None or result.finding.rule != "liveness"


def test_a_duplicated_registration_does_not_strand_the_broker():
    # The registration on a duplicating link is handled twice, so the controller hands out two epochs; the
    # broker must learn the one the controller kept (the answer to the copy handled last), or it heartbeats
    # with a stale epoch and stays fenced for good.
    options = SimOptions(variant="kip966")
    world = World(generate(1081, options)).run()
    assert world.finding is None, world.finding
    registrations = world.nodes[0].core.brokers
    assert all(world.nodes[b].lifecycle.broker_epoch == registrations[b].epoch for b in world.broker_ids)


def test_a_duplicate_of_a_refused_registration_is_never_delivered():
    # Finding 6: the first copy of a duplicated registration reached the controller while it restarted, so
    # the broker saw a refusal and registered anew; the late second copy then registered it once more and
    # the broker kept an epoch the controller had replaced. A refused request reached no server, so no copy
    # of it may arrive later (simulator.world._deliver).
    from pathlib import Path

    from simulator.schedule import Schedule

    path = Path(__file__).parents[2] / "docs/simulator-findings/broker-fenced-after-duplicated-registration.json"
    world = World(Schedule.from_json(path.read_text())).run()
    assert world.finding is None, world.finding
    registrations = world.active_controller().core.brokers
    assert all(world.nodes[b].lifecycle.broker_epoch == registrations[b].epoch for b in world.broker_ids)


@pytest.mark.parametrize("variant", ["kip966", "v3.5"])
def test_the_final_phase_writes_once_per_led_partition(variant):
    result = run_schedule(generate(5, SimOptions(variant=variant, partitions=2)), keep_trace=True)
    assert result.finding is None or result.finding.rule != "liveness"
    options = result.schedule.options
    healed_ms = options.duration_ms + options.settle_ms  # counted from t0 > 0
    final_invoke = min(op["index"] for op in result.ops if op.get("final"))
    probes = [op for op in result.ops[:final_invoke] if op["f"] == "send" and op["time"] // 1_000_000 > healed_ms]
    assert sorted(op["value"][0] for op in probes if op["type"] == "ok") == [0, 1], probes


def test_a_trace_that_stops_telling_hwm_changes_is_a_trace_finding(monkeypatch):
    emit = replica_module.PartitionReplica._emit

    def emit_but_hwm(self, kind, **attrs):
        if kind != "hwm" or attrs.get("hwm", 0) < 3:
            emit(self, kind, **attrs)

    monkeypatch.setattr(replica_module.PartitionReplica, "_emit", emit_but_hwm)
    result = simulate(0, SimOptions(variant="kip966", faults=()))
    assert result.finding is not None and result.finding.rule == "trace", result.finding
    assert "HWM" in result.finding.detail


def test_a_registration_the_controller_does_not_trace_is_a_trace_finding(monkeypatch):
    from reference_impl.protocol import controller_loop

    record_events = controller_loop.controller_record_events

    def without_fenced(controller, record, offset, before=None):
        return [ev for ev in record_events(controller, record, offset, before) if ev["kind"] != "fenced"]

    monkeypatch.setattr(controller_loop, "controller_record_events", without_fenced)
    result = simulate(0, SimOptions(variant="kip966"))  # its faults fence brokers
    assert result.finding is not None and result.finding.rule == "trace", result.finding
    assert "fenced True" in result.finding.detail


def test_a_final_read_never_served_after_convergence_is_a_liveness_finding(monkeypatch):
    from reference_impl.protocol.errors import Errors, error
    from reference_impl.protocol.replica_messages import FetchPartitionResult

    def refuse(self, fetch_offset, max_bytes, current_leader_epoch=-1):
        return FetchPartitionResult(error(Errors.NOT_LEADER_OR_FOLLOWER, "refused"))

    monkeypatch.setattr(replica_module.PartitionReplica, "read_committed", refuse)
    result = simulate(0, SimOptions(variant="kip966", faults=(), polls=0))
    assert result.finding is not None and result.finding.rule == "liveness", result.finding
    assert "final read" in result.finding.detail


def test_a_reassignment_accepted_but_never_carried_out_is_a_liveness_finding(monkeypatch):
    from reference_impl.protocol.controller import Controller, ControllerResult
    from reference_impl.protocol.errors import OK

    def accept_and_forget(self, changes):
        return ControllerResult([], {tp: OK for tp in changes})

    monkeypatch.setattr(Controller, "alter_partition_reassignments", accept_and_forget)
    options = SimOptions(variant="kip966", faults=("reassign",), fault_windows=1)
    def moves_for_good(events):
        return (any(e["do"] == "reassign" and sorted(e["replicas"]) != [1, 2, 3] for e in events)
                and not any(e["do"] == "cancel" for e in events))

    seed = next(s for s in range(50) if moves_for_good(generate(s, options).events))
    result = simulate(seed, options)
    assert result.finding is not None and result.finding.rule == "liveness", result.finding
    assert "was accepted" in result.finding.detail


def _patched_record_events(monkeypatch, change):
    from reference_impl.protocol import controller_loop

    record_events = controller_loop.controller_record_events

    def patched(controller, record, offset, before=None):
        return change(record_events(controller, record, offset, before))

    monkeypatch.setattr(controller_loop, "controller_record_events", patched)


def test_an_election_event_of_the_wrong_type_is_a_trace_finding(monkeypatch):
    def mislabel(events):
        return [dict(ev, type="unclean") if ev["kind"] == "election" else ev for ev in events]

    _patched_record_events(monkeypatch, mislabel)
    result = simulate(0, SimOptions(variant="kip966"))
    assert result.finding is not None and result.finding.rule == "trace", result.finding
    assert "election event" in result.finding.detail


def test_a_new_leader_without_an_election_event_is_a_trace_finding(monkeypatch):
    _patched_record_events(monkeypatch, lambda events: [ev for ev in events if ev["kind"] != "election"])
    result = simulate(0, SimOptions(variant="kip966"))
    assert result.finding is not None and result.finding.rule == "trace", result.finding
    assert "without an election event" in result.finding.detail


def test_a_replica_removed_by_a_reassignment_that_keeps_its_log_is_a_liveness_finding(monkeypatch):
    from reference_impl.protocol.replica_messages import DeleteLog

    apply_metadata = replica_module.PartitionReplica.apply_metadata

    def never_delete(self, state, now_ms):
        return [a for a in apply_metadata(self, state, now_ms) if not isinstance(a, DeleteLog)]

    monkeypatch.setattr(replica_module.PartitionReplica, "apply_metadata", never_delete)
    # seed 0's random events move a replica away (its steered ones, drawn besides, change the outcome)
    options = SimOptions(variant="kip966", reassignment_mode="incremental", brokers=4, steer=0.0)
    result = simulate(0, options)
    assert result.finding is not None and result.finding.rule == "liveness", result.finding
    assert "hosted" in result.finding.detail


def test_an_end_of_run_log_summary_that_is_not_the_log_is_a_trace_finding(monkeypatch):
    emit = replica_module.PartitionReplica._emit

    def stale_end_summary(self, kind, **attrs):
        if kind == "log_summary" and attrs.get("reason") == "end":
            attrs = dict(attrs, leo=attrs["leo"] + 1)
        emit(self, kind, **attrs)

    monkeypatch.setattr(replica_module.PartitionReplica, "_emit", stale_end_summary)
    result = simulate(0, SimOptions(variant="kip966", faults=()))
    assert result.finding is not None and result.finding.rule == "trace", result.finding
    assert "end-of-run summary" in result.finding.detail
