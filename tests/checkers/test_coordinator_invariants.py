"""I23-I26 on hand-built traces: the group coordinators' generations, assignments and accepted commits, the
transaction coordinators' decisions and the partition leaders' markers and producer batches. A clean trace
passes, each broken one is flagged, and a run whose trace lacks the events is not judged valid."""

from __future__ import annotations

from checkers.invariants import check_invariants

GROUPS = {"variant": "kip966", "sub_via": "subscribe"}
TXN = {"variant": "kip966", "txn": True}
G = "q-group"


def timed(events):
    return [{"node": "b1", **e, "time": i + 1} for i, e in enumerate(events)]


def judged(spec, events, inv):
    return check_invariants(spec, [], timed(events))["invariants"][inv]


# ---------------------------------------------------------------------------------------------- groups

def generation(gen, members, log_offset, group=G):
    return {"kind": "group_generation", "broker": 1, "group": group, "generation": gen, "protocol_type": "consumer",
            "protocol": "range", "leader": members[0] if members else None, "members": members,
            "offsets_partition": 7, "log_offset": log_offset}


def handed(gen, member, assigned, group=G):
    return {"kind": "group_assignment", "broker": 1, "group": group, "generation": gen, "member": member,
            "offsets_partition": 7, "bytes": 30, "assigned": [list(tp) for tp in assigned]}


def commit(gen, member, group_gen, log_offset, state="Stable", txn=False):
    event = {"kind": "group_commit", "broker": 1, "group": G, "generation": gen, "member": member,
             "group_generation": group_gen, "group_state": state, "offsets": [["q", 0, 5]],
             "offsets_partition": 7, "log_offset": log_offset, "txn": txn}
    if txn:
        event.update(transactional_id="t", producer_id=9, producer_epoch=0)
    return event


def rebalances():
    """Generation 1 with a alone, generation 2 with a and b, the partitions split, commits of each."""
    return [generation(1, ["a"], 10), handed(1, "a", [("q", 0), ("q", 1)]), commit(1, "a", 1, 12),
            generation(2, ["a", "b"], 20), handed(2, "b", [("q", 1)]), handed(2, "a", [("q", 0)]),
            handed(2, "b", [("q", 1)]),  # b's SyncGroup answered again: the same share
            commit(2, "a", 2, 25), commit(2, "b", 2, 26)]


def test_a_clean_group_history_holds_i23_and_i24():
    res = check_invariants(GROUPS, [], timed(rebalances()))["invariants"]
    assert res["I23"]["valid"] is True and res["I23"]["evaluated"] == 3
    assert res["I24"]["valid"] is True and res["I24"]["evaluated"] == 4


def test_a_commit_of_a_replaced_generation_is_flagged_from_the_report_and_from_the_log_order():
    # the zombie a commits from generation 1 after generation 2 began (offsets-commit-stale-generation)
    verdict = judged(GROUPS, [*rebalances(), commit(1, "a", 2, 30)], "I23")
    assert verdict["valid"] is False and verdict["count"] == 1
    detail = verdict["violations"][0]["detail"]
    assert "group was at generation 2" in detail and "written before it in its offsets partition is 2" in detail
    # a coordinator that misreports its own generation is caught by the log order alone
    verdict = judged(GROUPS, [*rebalances(), commit(1, "a", 1, 30)], "I23")
    assert verdict["valid"] is False and "is 2" in verdict["violations"][0]["detail"]


def test_a_commit_by_no_member_of_the_generation_is_flagged():
    verdict = judged(GROUPS, [*rebalances(), commit(2, "stranger", 2, 30)], "I23")
    assert verdict["valid"] is False and "stranger is no member of generation 2" in verdict["violations"][0]["detail"]


def test_commits_from_outside_group_management_go_only_into_an_empty_group_unless_transactional():
    empty = [generation(1, ["a"], 10), generation(2, [], 20)]  # every member left: an empty generation
    assert judged(GROUPS, [*empty, commit(-1, "", 2, 30, state="Empty")], "I23")["valid"] is True
    assert judged(GROUPS, [commit(-1, "", 0, 3, state="Empty")], "I23")["valid"] is True  # a new group
    verdict = judged(GROUPS, [*rebalances(), commit(-1, "", 2, 30, state="Stable")], "I23")
    assert verdict["valid"] is False and "not Empty" in verdict["violations"][0]["detail"]
    assert "has members" in verdict["violations"][0]["detail"]
    # emptied by a rebalance whose empty generation's record failed: Empty in memory, the log still at 2
    assert judged(GROUPS, [*rebalances(), commit(-1, "", 3, 30, state="Empty")], "I23")["valid"] is True
    # Kafka accepts a TxnOffsetCommit without generation and member whatever the group's state
    assert judged(GROUPS, [*rebalances(), commit(-1, "", 2, 30, txn=True)], "I23")["valid"] is True


def test_a_commit_with_a_generation_but_no_member_is_judged_by_the_generation_alone():
    # Kafka skips the member check for an empty member id but still checks the generation
    assert judged(GROUPS, [*rebalances(), commit(2, "", 2, 30)], "I23")["valid"] is True
    assert judged(GROUPS, [*rebalances(), commit(1, "", 2, 30)], "I23")["valid"] is False


def test_a_partition_handed_to_two_members_of_one_generation_is_flagged():
    events = [generation(2, ["a", "b"], 20), handed(2, "a", [("q", 0)]), handed(2, "b", [("q", 0)])]
    verdict = judged(GROUPS, events, "I24")
    assert verdict["valid"] is False and verdict["count"] == 1
    assert "[['q', 0]] handed to b and to ['a']" in verdict["violations"][0]["detail"]
    # the same partition in another generation, or in another group, is another assignment
    ok = [handed(2, "a", [("q", 0)]), handed(3, "b", [("q", 0)]), handed(2, "c", [("q", 0)], group="other")]
    assert judged(GROUPS, ok, "I24")["valid"] is True


def test_undecodable_assignments_are_skipped_and_an_all_undecodable_trace_is_not_valid():
    undecodable = {**handed(2, "b", []), "undecodable": "a topic name runs past the end"}
    del undecodable["assigned"]
    assert judged(GROUPS, [handed(2, "a", [("q", 0)]), undecodable], "I24")["valid"] is True
    verdict = judged(GROUPS, [generation(1, ["a"], 1), undecodable], "I24")
    assert verdict["valid"] == "unknown" and "undecodable" in verdict["reason"]


def test_without_group_events_the_group_invariants_are_unknown_or_not_applicable():
    other = [{"kind": "broker_state", "broker": 1, "state": "RUNNING"}]
    for inv in ("I23", "I24"):
        assert judged(GROUPS, other, inv)["valid"] == "unknown"  # groups were used: not judged valid
        verdict = judged({"variant": "kip966", "sub_via": "assign"}, other, inv)
        assert verdict["valid"] is True and verdict["applicable"] is False
    result = check_invariants(GROUPS, [], timed(other))
    assert result["valid"] == "unknown" and {"I23", "I24"} <= set(result["undecided"])


def test_group_violations_are_a_known_issue_where_the_profile_allows_loss():
    res = check_invariants(GROUPS, [], timed([*rebalances(), commit(1, "a", 2, 30)]), loss_status="known-issue")
    assert res["invariants"]["I23"]["status"] == "known-issue" and res["valid"] is not False


# ---------------------------------------------------------------------------------------- transactions

def transition(frm, to, partitions=(("q", 0), ("q", 1)), epoch=0, pid=9, tid="t"):
    return {"kind": "txn_transition", "broker": 2, "transactional_id": tid, "producer_id": pid,
            "producer_epoch": epoch, "from": frm, "to": to, "partitions": [list(tp) for tp in partitions],
            "state_partition": 1, "coordinator_epoch": 3}


def marker(partition, kind, epoch=0, pid=9, replica=1, leader_epoch=4, offset=50, topic="q"):
    return {"kind": "txn_marker", "topic": topic, "partition": partition, "replica": replica,
            "leader_epoch": leader_epoch, "producer_id": pid, "producer_epoch": epoch, "marker": kind,
            "offset": offset}


def batch(partition, epoch=0, pid=9, replica=1, leader_epoch=4, offset=40, transactional=True):
    return {"kind": "producer_batch", "topic": "q", "partition": partition, "replica": replica,
            "leader_epoch": leader_epoch, "producer_id": pid, "producer_epoch": epoch, "base_offset": offset,
            "transactional": transactional}


def committed_then_aborted():
    """A transaction committed (markers on both partitions), then one aborted by a fencing InitProducerId:
    its PrepareAbort carries the bumped epoch, and so do its markers."""
    return [transition(None, "Empty", ()), transition("Empty", "Ongoing"), batch(0), batch(1),
            transition("Ongoing", "PrepareCommit"), marker(0, "COMMIT"), marker(1, "COMMIT", replica=2),
            transition("PrepareCommit", "CompleteCommit"),
            transition("CompleteCommit", "Ongoing", (("q", 0),)), batch(0, offset=60),
            transition("Ongoing", "PrepareAbort", (("q", 0),), epoch=1), marker(0, "ABORT", epoch=1, offset=61),
            transition("PrepareAbort", "CompleteAbort", (("q", 0),), epoch=1),
            batch(0, epoch=1, offset=62)]


def test_a_clean_transaction_history_holds_i25_and_i26():
    res = check_invariants(TXN, [], timed(committed_then_aborted()))["invariants"]
    assert res["I25"]["valid"] is True and res["I25"]["evaluated"] == 2
    assert res["I26"]["valid"] is True and res["I26"]["evaluated"] == 7


def test_a_commit_completed_without_its_markers_is_flagged():
    # txn-markers-not-written: CompleteCommit with no COMMIT marker anywhere
    events = [transition("Empty", "Ongoing"), transition("Ongoing", "PrepareCommit"),
              transition("PrepareCommit", "CompleteCommit")]
    verdict = judged(TXN, events, "I25")
    assert verdict["valid"] is False
    assert "no COMMIT marker of producer 9 (epoch >= 0) on [['q', 0], ['q', 1]]" in verdict["violations"][0]["detail"]


def test_a_marker_from_before_the_decision_or_of_an_older_epoch_does_not_count():
    events = [marker(0, "COMMIT"), transition("Empty", "Ongoing"), transition("Ongoing", "PrepareCommit", epoch=2),
              marker(0, "COMMIT", epoch=1), marker(1, "COMMIT", epoch=2),
              transition("PrepareCommit", "CompleteCommit", epoch=2)]
    verdict = judged(TXN, events, "I25")
    assert verdict["valid"] is False and "on [['q', 0]]" in verdict["violations"][0]["detail"]
    # a newer epoch's marker does count (the producer epoch of a marker only rises)
    events[3] = marker(0, "COMMIT", epoch=3)
    assert judged(TXN, events, "I25")["valid"] is True


def test_a_marker_of_the_other_outcome_is_flagged():
    events = [transition("Ongoing", "PrepareAbort"), marker(0, "ABORT"), marker(1, "ABORT"), marker(1, "COMMIT"),
              transition("PrepareAbort", "CompleteAbort")]
    verdict = judged(TXN, events, "I25")
    assert verdict["valid"] is False and "COMMIT markers on [['q', 1]]" in verdict["violations"][0]["detail"]


def test_undecided_or_untraced_decisions_are_not_judged():
    # still in PrepareCommit at the end of the trace (a successor may write the markers), and a completion
    # whose PrepareCommit the trace does not show: nothing judged, so not valid
    events = [transition("Ongoing", "PrepareCommit"), transition("Ongoing", "PrepareCommit", tid="u"),
              transition("PrepareCommit", "CompleteCommit", tid="v")]
    verdict = judged(TXN, events, "I25")
    assert verdict["valid"] == "unknown" and "decision" in verdict["reason"]


def test_a_fenced_epoch_appended_after_a_newer_one_in_one_leadership_is_flagged():
    # fenced-producer-accepted: the zombie's batch at epoch 0 after the abort marker of epoch 1
    events = [batch(0), marker(0, "ABORT", epoch=1, offset=41), batch(0, epoch=0, offset=42)]
    verdict = judged(TXN, events, "I26")
    assert verdict["valid"] is False and verdict["count"] == 1
    assert "batch of producer 9 at epoch 0 after epoch 1" in verdict["violations"][0]["detail"]
    # an older marker is as bad
    assert judged(TXN, [batch(0, epoch=2), marker(0, "ABORT", epoch=1)], "I26")["valid"] is False


def test_producer_epochs_are_judged_per_leadership_per_replica_and_per_producer():
    events = [batch(0, epoch=2), batch(0, epoch=1, leader_epoch=5),    # a new leadership: its own order
              batch(0, epoch=1, replica=2), batch(1, epoch=0),         # another replica, another partition
              batch(0, epoch=0, pid=10, leader_epoch=5)]               # another producer
    assert judged(TXN, events, "I26")["valid"] is True


def test_idempotent_batches_are_judged_in_a_run_without_transactions_and_absent_ones_do_not_apply():
    spec = {"variant": "kip966"}
    assert judged(spec, [batch(0, transactional=False)], "I26")["valid"] is True
    other = [{"kind": "broker_state", "broker": 1, "state": "RUNNING"}]
    for inv in ("I25", "I26"):
        verdict = judged(spec, other, inv)
        assert verdict["valid"] is True and verdict["applicable"] is False
        assert judged(TXN, other, inv)["valid"] == "unknown"


def test_a_group_that_formed_but_committed_nothing_holds_i23_vacuously():
    # the coordinator traced its generations, so the events are there: no commit accepted is nothing to judge
    # (a subscribe+txn run whose consumers never committed), not "events absent"
    verdict = judged(GROUPS, [generation(1, ["a"], 10), handed(1, "a", [("q", 0)])], "I23")
    assert verdict["valid"] is True and verdict["evaluated"] == 0 and "generations" in verdict["reason"]
    assert judged(GROUPS, [generation(1, ["a"], 10)], "I24")["valid"] is True
    # a zombie's stale commit is still flagged: vacuity only fills in where nothing was judged
    assert judged(GROUPS, [*rebalances(), commit(1, "a", 2, 30)], "I23")["valid"] is False


def test_coordinators_that_completed_no_transaction_hold_i25_vacuously():
    verdict = judged(TXN, [transition("Empty", "Ongoing")], "I25")
    assert verdict["valid"] is True and verdict["evaluated"] == 0 and "state records" in verdict["reason"]
