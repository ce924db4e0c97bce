"""Nemesis interval derivation for Spark's statistics (pure Python; the rule is harness.faults's)."""

from spark_analysis.intervals import Interval, fault_intervals, merge, state_at


def _ops(*steps):
    """(f, invoke time, completion type, completion time) -> nemesis ops in history order."""
    out = []
    for f, t0, typ, t1 in steps:
        out.append({"type": "invoke", "f": f, "time": t0})
        out.append({"type": typ, "f": f, "time": t1})
    return out


def test_kill_then_start_is_one_interval_from_invocation_to_heal_completion():
    ivs, heals = fault_intervals(_ops(("kill", 10, "ok", 12), ("start", 50, "ok", 55)), end_of_history=100)
    assert ivs == [Interval(10, 55, "kill")]
    assert heals == [55]


def test_failed_fault_opens_nothing_and_heal_without_open_fault_is_no_recovery_point():
    ivs, heals = fault_intervals(_ops(("start-partition", 10, "fail", 12), ("stop-partition", 20, "ok", 22)), 100)
    assert ivs == [] and heals == []


def test_info_fault_counts_and_unhealed_fault_runs_to_end_of_history():
    ivs, heals = fault_intervals(_ops(("pause", 10, "info", 15)), end_of_history=90)
    assert ivs == [Interval(10, 90, "pause")] and heals == []


def test_a_heal_that_did_not_complete_ok_ends_nothing():
    ivs, heals = fault_intervals(_ops(("kill", 10, "ok", 12), ("start", 20, "info", 30), ("start", 40, "ok", 45)),
                                 end_of_history=100)
    assert ivs == [Interval(10, 45, "kill")] and heals == [45]


def test_a_heal_ends_only_the_faults_it_heals():
    ivs, heals = fault_intervals(_ops(("start-partition", 10, "ok", 11), ("kill", 20, "ok", 21),
                                      ("start", 30, "ok", 31), ("stop-partition", 40, "ok", 41)), 100)
    assert ivs == [Interval(10, 41, "start-partition+kill")] and heals == [31, 41]


def test_instant_faults_span_their_own_op_and_overlaps_merge():
    ivs, _ = fault_intervals(_ops(("kill", 10, "ok", 20), ("power-loss", 30, "ok", 40),
                                  ("heal", 50, "ok", 60), ("reassign", 70, "ok", 75)), 100)
    assert ivs == [Interval(10, 60, "kill+power-loss"), Interval(70, 75, "reassign")]


def test_ops_outside_the_vocabulary_are_neither_faults_nor_heals():
    ivs, heals = fault_intervals(_ops(("kill", 10, "ok", 12), ("restart", 20, "ok", 22), ("mystery", 30, "ok", 31)),
                                 end_of_history=50)
    assert ivs == [Interval(10, 50, "kill")] and heals == []


def test_merge_and_state_at():
    merged = merge([(0, 10, "a"), (5, 20, "b"), (30, 40, "a")])
    assert merged == [Interval(0, 20, "a+b"), Interval(30, 40, "a")]
    assert [state_at(merged, t) for t in (0, 19, 20, 29, 30, 40)] == [
        "fault", "fault", "healthy", "healthy", "fault", "healthy"]
