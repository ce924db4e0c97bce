"""Protocol invariants over hand-built traces (docs/protocol-rules.md 4; 5.1 Last Replica Standing)."""

from checkers.invariants import check_invariants
from reference_impl.protocol.log import LogBatch
from reference_impl.protocol.log_summary import log_summary

T, P = "kraftcheck", 0


def ctl(t, line, **state):
    base = {"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1, "leader_epoch": 1, "partition_epoch": 1,
            "adding": [], "removing": [], "elr": [], "last_known_elr": []}
    base.update(state)
    return {"time": t, "node": "controller", "kind": "metadata_applied", "source": "controller", "topic": T,
            "partition": P, "_line": line, **base}


def rep(t, line, replica, kind, **attrs):
    return {"time": t, "node": f"b{replica}", "kind": kind, "topic": T, "partition": P, "replica": replica,
            "_line": line, **attrs}


def reg(t, line, broker, epoch, prev):
    return {"time": t, "node": "controller", "kind": "registered", "source": "controller", "broker": broker,
            "broker_epoch": epoch, "previous_broker_epoch": prev, "_line": line}


def fence(t, line, broker, kind="fenced"):
    return {"time": t, "node": "controller", "kind": kind, "source": "controller", "broker": broker, "_line": line}


def healthy():
    return [
        reg(0, 1, 1, 10, None), reg(1, 2, 2, 11, None), reg(2, 3, 3, 12, None),
        fence(3, 4, 1, "unfenced"), fence(3, 5, 2, "unfenced"), fence(3, 6, 3, "unfenced"),
        ctl(5, 7),
        rep(6, 8, 1, "leader_epoch_start", leader_epoch=1, leso=0, hwm=0, leo=0),
        rep(7, 9, 1, "leo", leo=1, role="leader", leader_epoch=1),
        rep(8, 10, 2, "leo", leo=1, role="follower", leader_epoch=1),
        rep(9, 11, 3, "leo", leo=1, role="follower", leader_epoch=1),
        rep(10, 12, 1, "hwm", hwm=1, role="leader", leader_epoch=1),
    ]


def lrs():
    """docs/protocol-rules.md 5.1 under v3.5: 2 and 3 fenced, 1 crash-lossy, restarts empty, is re-elected."""
    return healthy() + [
        fence(20, 13, 2), ctl(20, 14, isr=[1, 3], partition_epoch=2),
        fence(21, 15, 3), ctl(21, 16, isr=[1], partition_epoch=3),
        fence(30, 17, 1), ctl(30, 18, isr=[1], leader=-1, leader_epoch=2, partition_epoch=4),
        reg(40, 19, 1, 20, 10),
        rep(41, 20, 1, "leo", leo=0, role="none", leader_epoch=2),
        fence(42, 21, 1, "unfenced"), ctl(42, 22, isr=[1], leader=1, leader_epoch=3, partition_epoch=5),
        rep(43, 23, 1, "leader_epoch_start", leader_epoch=3, leso=0, hwm=0, leo=0),
    ]


def test_healthy_trace_is_valid_where_observable():
    res = check_invariants({"variant": "v3.5", "min_isr": 2}, [], healthy())
    inv = res["invariants"]
    for name in ("I1", "I9", "I11", "I12"):
        assert inv[name]["valid"] is True, (name, inv[name])
    assert inv["I4"]["valid"] == "unknown" and inv["I4"]["reason"] == "the events it needs are absent"
    assert res["violated"] == []


def test_last_replica_standing_v35_violates_i1_i2_i13_with_events():
    res = check_invariants({"variant": "v3.5", "min_isr": 2}, [], lrs())
    inv = res["invariants"]
    assert inv["I1"]["valid"] is False
    lines = [e["line"] for e in inv["I1"]["violations"][0]["events"]]
    assert lines == [23, 12]  # the empty leader's start and the hwm event that set the True HWM
    assert inv["I2"]["valid"] is False and inv["I13"]["valid"] is False
    assert inv["I9"]["valid"] is True  # the sole fenced member may stay in the ISR under v3.5
    assert res["valid"] is False


def test_lrs_is_a_known_issue_when_the_profile_says_so():
    res = check_invariants({"variant": "v3.5", "min_isr": 2}, [], lrs(), loss_status="known-issue")
    assert res["invariants"]["I1"]["status"] == "known-issue"
    assert "I1" in res["known_issues"]
    assert res["valid"] != False  # noqa: E712 - unknown or True, never invalid


def test_kip966_controller_sanity_and_recovery_quorum():
    trace = healthy() + [ctl(20, 13, isr=[1], elr=[1, 3], partition_epoch=2),
                         ctl(21, 14, isr=[], elr=[], last_known_elr=[3], leader=-1, leader_epoch=2,
                             partition_epoch=3)]
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I9"]["valid"] is False and "intersects" in inv["I9"]["violations"][0]["detail"]
    assert inv["I8"]["valid"] is False


def test_i8_lkelr_may_exceed_min_isr():
    """K2 puts every replica leaving the ISR into the ELR, so the LKELR may hold more than MinISR (K8 is
    a lower bound); fewer than MinISR is the violation."""
    def leaderless(lkelr):
        return healthy() + [ctl(21, 14, isr=[], elr=[], last_known_elr=lkelr, leader=-1, leader_epoch=2,
                                partition_epoch=2)]
    spec = {"variant": "kip966", "min_isr": 2}
    assert check_invariants(spec, [], leaderless([1, 2, 3]))["invariants"]["I8"]["valid"] is True
    assert check_invariants(spec, [], leaderless([1, 2]))["invariants"]["I8"]["valid"] is True
    assert check_invariants(spec, [], leaderless([3]))["invariants"]["I8"]["valid"] is False


def test_epoch_and_hwm_rules():
    trace = healthy() + [ctl(20, 13, isr=[1, 2], partition_epoch=3),   # PE jumped 1 -> 3
                         rep(21, 14, 1, "hwm", hwm=0, role="leader", leader_epoch=1)]  # lowered HWM
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I11"]["valid"] is False
    assert inv["I12"]["valid"] is False


def test_history_parts_acked_beyond_true_hwm():
    ops = [{"index": 0, "time": 5, "type": "invoke", "process": 0, "f": "send", "value": [0, 7]},
           {"index": 1, "time": 9, "type": "ok", "process": 0, "f": "send", "value": [0, [0, 7]]}]
    inv = check_invariants({"variant": "kip966", "topic": T}, ops, healthy())["invariants"]
    assert inv["I14"]["valid"] is False  # acknowledged at t=9, the HWM passed offset 0 only at t=10
    ops[1]["time"] = 11
    inv = check_invariants({"variant": "kip966", "topic": T}, ops, healthy())["invariants"]
    assert inv["I14"]["valid"] is True


def test_without_trace_everything_trace_based_is_unknown():
    res = check_invariants({}, [], [], trace_given=False)
    assert res["invariants"]["I1"]["valid"] == "unknown"
    assert res["invariants"]["I1"]["reason"] == "no trace given"
    assert res["valid"] == "unknown"


def test_lossy_restart_reported_before_registration():
    """As the server does it: the restarted broker reports its recovered log (reason recovery) before it
    registers; it is not running then (no I2), but staying in the ISR after registering violates I13."""
    trace = healthy() + [
        fence(20, 13, 2), ctl(20, 14, isr=[1, 3], partition_epoch=2),
        fence(21, 15, 3), ctl(21, 16, isr=[1], partition_epoch=3),
        rep(30, 17, 1, "leo", leo=0, role="none", reason="recovery"),
        fence(31, 18, 1), ctl(31, 19, isr=[1], leader=-1, leader_epoch=2, partition_epoch=4),
        reg(40, 20, 1, 20, 10),
        fence(42, 21, 1, "unfenced"), ctl(42, 22, isr=[1], leader=1, leader_epoch=3, partition_epoch=5),
    ]
    inv = check_invariants({"variant": "v3.5", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I13"]["valid"] is False
    assert [e["line"] for e in inv["I13"]["violations"][0]["events"]][:2] == [20, 17]
    # before its registration the restarted broker was not running: I2 only fires on controller states
    # after it (line 22: still in the ISR with LEO 0), never on the startup report itself
    assert inv["I2"]["valid"] is False
    assert all(v["events"][1]["line"] >= 20 for v in inv["I2"]["violations"])


def test_i13_is_vacuously_valid_with_registrations_and_no_lossy_restart():
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], healthy())["invariants"]
    assert inv["I13"]["valid"] is True


def summary(t, line, replica, batches, hwm, reason="shutdown"):
    """A replica's log_summary event over ``batches`` = [(epoch, payload), ...], one record each."""
    log = [LogBatch(i, 1, epoch, payload=payload) for i, (epoch, payload) in enumerate(batches)]
    return rep(t, line, replica, "log_summary", reason=reason, **log_summary(log, 0, hwm))


def _observable_run():
    """A healthy trace in which every invariant is evaluated, and a history (send, final read)."""
    trace = healthy() + [rep(11, 13, 1, "role", role="leader", leader=1, leader_epoch=1),
                         rep(11, 14, 1, "metadata_applied", isr=[1, 2, 3], leader=1, leader_epoch=1,
                             partition_epoch=1),
                         ctl(12, 15, partition_epoch=2)]
    trace += [summary(20, 16 + b, b, [(1, b"7")], 1) for b in (1, 2, 3)]
    trace += [{"time": 21, "node": "b1", "kind": "metadata_offset", "broker": 1, "offset": 3, "_line": 19},
              {"time": 2.5, "node": "controller", "kind": "registered", "source": "controller", "broker": 4,
               "broker_epoch": 13, "previous_broker_epoch": None, "offset": 5, "_line": 20}]
    trace.sort(key=lambda e: e["time"])
    ops = [{"index": 0, "time": 5, "type": "invoke", "process": 0, "f": "send", "value": [0, 7]},
           {"index": 1, "time": 11, "type": "ok", "process": 0, "f": "send", "value": [0, [0, 7]]},
           {"index": 2, "time": 12, "type": "invoke", "process": 1, "f": "poll", "value": None, "final": True},
           {"index": 3, "time": 13, "type": "ok", "process": 1, "f": "poll", "value": {"0": [[0, 7]]},
            "final": True, "ends": {"0": 1}}]
    return trace, ops


def test_every_invariant_is_observable_on_a_complete_trace():
    trace, ops = _observable_run()
    res = check_invariants({"variant": "kip966", "topic": T, "min_isr": 2}, ops, trace)
    assert res["not_checkable"] == {}
    for name, entry in res["invariants"].items():
        assert entry["valid"] is True, (name, entry)
    assert res["valid"] is True


def test_i4_committed_prefixes_must_match():
    trace = healthy() + [summary(20, 13, 1, [(1, b"a"), (1, b"b")], 2),
                         summary(21, 14, 2, [(1, b"a"), (2, b"X")], 2)]
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I4"]["valid"] is False and "below offset 2" in inv["I4"]["violations"][0]["detail"]
    # the same divergence above one replica's HWM is not committed there: I4 holds (offset 1 matches)
    trace[-2:] = [summary(20, 13, 1, [(1, b"a"), (1, b"b")], 1), summary(21, 14, 2, [(1, b"a"), (2, b"X")], 1)]
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I4"]["valid"] is True


def test_i16_same_epoch_and_offsets_same_records():
    trace = healthy() + [summary(20, 13, 1, [(1, b"a"), (2, b"b")], 0),
                         summary(21, 14, 2, [(1, b"a"), (2, b"c")], 0)]
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I16"]["valid"] is False and "epoch 2" in inv["I16"]["violations"][0]["detail"]
    # Nothing is committed in either log (both HWMs at the start): the common committed prefix is empty,
    # so I4 holds trivially for the pair.
    assert inv["I4"]["valid"] is True


def test_i4_and_i16_stay_unknown_when_summaries_cannot_be_compared():
    # Both logs hold committed records of epoch 1, but the summaries report prefix digests at different
    # offsets and ranges of different extents: nothing can be compared by digest.
    a = summary(20, 13, 1, [(1, b"a"), (1, b"b"), (1, b"c")], 3)
    b = summary(21, 14, 2, [(1, b"a"), (1, b"b")], 2)
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], healthy() + [a, b])["invariants"]
    assert inv["I4"]["valid"] == "unknown" and inv["I16"]["valid"] == "unknown"


def test_i5_replica_state_must_be_the_controllers_at_that_pe():
    trace = healthy() + [rep(11, 13, 2, "metadata_applied", isr=[1, 2], leader=1, leader_epoch=1,
                             partition_epoch=1)]
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], trace)["invariants"]
    assert inv["I5"]["valid"] is False and "isr=[1, 2]" in inv["I5"]["violations"][0]["detail"]
    # a replica state seen before the controller's record is checked when the record arrives
    early = [rep(4, 6, 2, "metadata_applied", isr=[1, 2, 3], leader=1, leader_epoch=1, partition_epoch=1)]
    inv = check_invariants({"variant": "kip966", "min_isr": 2}, [], healthy()[:6] + early + healthy()[6:])
    assert inv["invariants"]["I5"]["valid"] is True
    ahead = healthy() + [{"time": 30, "node": "b1", "kind": "metadata_offset", "broker": 1, "offset": 9},
                         {"time": 0, "kind": "registered", "source": "controller", "broker": 4, "offset": 5}]
    assert check_invariants({}, [], ahead)["invariants"]["I5"]["valid"] is False


def test_check_run_says_what_was_not_checked(tmp_path):
    import json

    from checkers.analysis import check_run
    trace, ops = _observable_run()
    hist, tr = tmp_path / "history.jsonl", tmp_path / "trace.jsonl"
    hist.write_text("".join(json.dumps(op) + "\n" for op in ops))
    tr.write_text("".join(json.dumps({k: v for k, v in ev.items() if k != "_line"}) + "\n" for ev in trace))
    res = check_run({"variant": "kip966", "topic": T, "min_isr": 2}, hist, tr, options={"linear": False})
    assert res["valid"] is True, res["checkers"]["invariants"]
    assert not any(s.startswith("invariants") for s in res["not_checked"])
    # Without a trace the whole invariants checker is left out of the verdict, and that is said too.
    res = check_run({"variant": "kip966", "topic": T}, hist, None, options={"linear": False})
    assert res["valid"] is True
    assert res["not_checked"][0].startswith("invariants: not counted in the verdict: no trace given")


def life(t, line, broker, kind, **attrs):
    """A broker's own lifecycle event (no partition), as the server's trace writes it."""
    return {"time": t, "node": f"b{broker}", "kind": kind, "broker": broker, "_line": line, **attrs}


def restarts(second_stop_clean):
    """Broker 1 stops cleanly at epoch 10, registers with that claim (epoch 20), then stops again, cleanly
    or by kill -9 (nothing traced), and registers a third time claiming epoch 10 once more."""
    stop = [life(50, 31, 1, "shutdown", clean=True, broker_epoch=20)] if second_stop_clean else []
    claim = 20 if second_stop_clean else 10
    return healthy() + [
        life(30, 24, 1, "shutdown", clean=True, broker_epoch=10),
        life(40, 25, 1, "registered", broker_epoch=20, incarnation_id="a", previous_broker_epoch=10),
        life(41, 26, 1, "registered", broker_epoch=20, incarnation_id="a", previous_broker_epoch=10),
        *stop,
        life(60, 32, 1, "registered", broker_epoch=30, incarnation_id="b", previous_broker_epoch=claim),
    ]


def test_i13_a_clean_shutdown_claim_needs_a_clean_stop_just_before():
    honest = check_invariants({"variant": "kip966", "min_isr": 2}, [], restarts(True))["invariants"]["I13"]
    assert honest["valid"] is True
    lying = check_invariants({"variant": "kip966", "min_isr": 2}, [], restarts(False))["invariants"]["I13"]
    assert lying["valid"] is False and lying["count"] == 1
    assert "no clean stop traced" in lying["violations"][0]["detail"]
    assert [e["line"] for e in lying["violations"][0]["events"]] == [32]


def test_i13_a_crash_traced_as_unclean_cancels_the_earlier_clean_stop():
    trace = healthy() + [
        life(30, 24, 1, "shutdown", clean=True, broker_epoch=10),
        life(35, 25, 1, "shutdown", clean=False, broker_epoch=10),
        life(40, 26, 1, "registered", broker_epoch=20, incarnation_id="a", previous_broker_epoch=10),
    ]
    assert check_invariants({"variant": "kip966"}, [], trace)["invariants"]["I13"]["valid"] is False
    trace[-1] = life(40, 26, 1, "registered", broker_epoch=20, incarnation_id="a", previous_broker_epoch=-1)
    assert check_invariants({"variant": "kip966"}, [], trace)["invariants"]["I13"]["valid"] is True
