"""Nemesis interval derivation (pure Python; spark_analysis.intervals states the rule)."""

from spark_analysis.intervals import Interval, fault_intervals, is_heal, merge, state_at


def _ops(*steps):
    """(f, invoke time, completion type, completion time) -> nemesis ops in history order."""
    out = []
    for f, t0, typ, t1 in steps:
        out.append({"type": "invoke", "f": f, "time": t0})
        out.append({"type": typ, "f": f, "time": t1})
    return out


def test_heal_names():
    assert [is_heal(f) for f in ("heal", "start", "resume", "stop-partition", "reset-clock", "restart")] == [True] * 6
    assert [is_heal(f) for f in ("kill", "stop", "pause", "start-partition", "bump-clock", "power-loss")] == [False] * 6


def test_kill_then_start_is_one_interval_from_completion_to_heal_completion():
    ivs, heals = fault_intervals(_ops(("kill", 10, "ok", 12), ("start", 50, "ok", 55)), end_of_history=100)
    assert ivs == [Interval(12, 55, "kill")]
    assert heals == [55]


def test_failed_fault_opens_nothing_and_heal_without_open_fault_is_no_recovery_point():
    ivs, heals = fault_intervals(_ops(("start-partition", 10, "fail", 12), ("stop-partition", 20, "ok", 22)), 100)
    assert ivs == [] and heals == []


def test_info_fault_counts_and_unhealed_fault_runs_to_end_of_history():
    ivs, heals = fault_intervals(_ops(("pause", 10, "info", 15)), end_of_history=90)
    assert ivs == [Interval(15, 90, "pause")] and heals == []


def test_instant_faults_span_their_own_op_and_overlaps_merge():
    ivs, _ = fault_intervals(_ops(("kill", 10, "ok", 20), ("power-loss", 30, "ok", 40),
                                  ("heal", 50, "ok", 60), ("reassign", 70, "ok", 75)), 100)
    assert ivs == [Interval(20, 60, "kill+power-loss"), Interval(70, 75, "reassign")]


def test_merge_and_state_at():
    merged = merge([(0, 10, "a"), (5, 20, "b"), (30, 40, "a")])
    assert merged == [Interval(0, 20, "a+b"), Interval(30, 40, "a")]
    assert [state_at(merged, t) for t in (0, 19, 20, 29, 30, 40)] == [
        "fault", "fault", "healthy", "healthy", "fault", "healthy"]
