"""I22, one vote per voter and epoch, on hand-built traces: a voter's grants as its candidates report them
(``quorum_vote``) and the vote its own state names (``quorum_state``)."""

from __future__ import annotations

from checkers.invariants import check_invariants

SPEC = {"variant": "kip966", "controllers": 3}


def state(voter, epoch, state_, reason, voted_for=None, leader=None):
    return {"kind": "quorum_state", "node": str(voter), "voter": voter, "epoch": epoch, "state": state_,
            "reason": reason, "voted_for": voted_for, "leader": leader, "hwm": 0, "log_end": 0}


def answer(candidate, epoch, voter, granted=True, pre_vote=False):
    return {"kind": "quorum_vote", "node": str(candidate), "voter": candidate, "epoch": epoch,
            "from_voter": voter, "granted": granted, "pre_vote": pre_vote}


def timed(events):
    return [{**e, "time": i + 1} for i, e in enumerate(events)]


def i22(events):
    return check_invariants(SPEC, [], timed(events))["invariants"]["I22"]


def election(epoch=1, leader=1, voter=2, other=3):
    """A clean election of ``leader`` in ``epoch`` with a pre-vote round first: ``voter`` grants, ``other``
    refuses, then both follow."""
    return [
        state(leader, epoch - 1, "prospective", "prospective"),
        answer(leader, epoch - 1, voter, pre_vote=True),
        state(leader, epoch, "candidate", "candidate", voted_for=leader),
        state(voter, epoch, "unattached", "unattached"),
        state(voter, epoch, "unattached", "voted", voted_for=leader),
        answer(leader, epoch, voter),
        state(other, epoch, "unattached", "unattached"),
        answer(leader, epoch, other, granted=False),
        state(leader, epoch, "leader", "leader", voted_for=leader, leader=leader),
        state(voter, epoch, "follower", "follower", voted_for=leader, leader=leader),
        state(other, epoch, "follower", "follower", leader=leader),
    ]


def test_a_clean_election_keeps_to_one_vote_per_voter():
    verdict = i22(election())
    assert verdict["valid"] is True and verdict["evaluated"] >= 5


def test_two_grants_of_one_voter_in_one_epoch_are_flagged_from_the_candidates_answers():
    # the voter traced neither vote (it never recorded them): only its candidates show them
    events = [state(1, 4, "candidate", "candidate", voted_for=1), state(2, 4, "candidate", "candidate", voted_for=2),
              answer(1, 4, 3), answer(2, 4, 3)]
    verdict = i22(events)
    assert verdict["valid"] is False and verdict["count"] == 1
    assert "voter 3 granted its vote of quorum epoch 4 to 1 and to 2" in verdict["violations"][0]["detail"]


def test_a_grant_against_the_vote_the_voter_names_is_flagged():
    events = [state(1, 4, "candidate", "candidate", voted_for=1), state(2, 4, "candidate", "candidate", voted_for=2),
              state(3, 4, "unattached", "voted", voted_for=1), answer(2, 4, 3)]
    verdict = i22(events)
    assert verdict["valid"] is False and verdict["count"] == 1
    # a candidate that voted for itself grants nobody else in that epoch either
    assert i22([state(3, 4, "candidate", "candidate", voted_for=3), answer(2, 4, 3)])["valid"] is False


def test_pre_votes_and_refusals_do_not_count_and_each_epoch_has_its_own_vote():
    events = [answer(1, 4, 3, pre_vote=True), answer(2, 4, 3, pre_vote=True),  # KIP-996: both may get it
              answer(1, 5, 3, granted=False), answer(2, 5, 3),
              answer(1, 6, 3)]
    assert i22(events)["valid"] is True


def test_the_same_grant_answered_twice_is_one_vote():
    events = [state(1, 4, "candidate", "candidate", voted_for=1), state(3, 4, "unattached", "voted", voted_for=1),
              answer(1, 4, 3), answer(1, 4, 3)]
    assert i22(events)["valid"] is True


def test_a_vote_forgotten_within_its_epoch_is_flagged():
    # the voter learns the leader it voted for and drops its vote: nothing then stops a second grant
    events = election()
    events[-2] = state(2, 1, "follower", "follower", voted_for=None, leader=1)
    verdict = i22(events)
    assert verdict["valid"] is False and "names no vote" in verdict["violations"][0]["detail"]
    # a granted vote the voter never recorded at all: its candidate's answer is the only trace of it
    unrecorded = [e for e in election() if not (e["kind"] == "quorum_state" and e["reason"] == "voted")]
    unrecorded = [state(2, 1, "follower", "follower", leader=1) if e["kind"] == "quorum_state"
                  and e["voter"] == 2 and e["state"] == "follower" else e for e in unrecorded]
    assert i22(unrecorded)["valid"] is False


def test_a_restart_keeps_the_vote_and_a_new_epoch_starts_without_one():
    kept = election() + [state(2, 1, "unattached", "start", voted_for=1, leader=1),
                         state(2, 2, "unattached", "unattached")]
    assert i22(kept)["valid"] is True
    lost = election() + [state(2, 1, "unattached", "start", voted_for=None)]
    assert i22(lost)["valid"] is False


def test_a_vote_the_voter_never_cast_is_flagged():
    # a vote carried into an epoch in which the voter granted nothing (kept from an older epoch)
    events = election() + [state(2, 2, "follower", "follower", voted_for=1, leader=3)]
    verdict = i22(events)
    assert verdict["valid"] is False and "never cast" in verdict["violations"][0]["detail"]


def test_a_vote_goes_only_to_a_candidate_of_its_epoch():
    # a pre-vote recorded as a vote: the prospective stands in the next epoch, not in this one
    prospective = [state(1, 3, "prospective", "prospective"), state(2, 3, "follower", "voted", voted_for=1, leader=3)]
    verdict = i22(prospective)
    assert verdict["valid"] is False and "never stood as candidate" in verdict["violations"][0]["detail"]
    # a request of an older epoch granted in the voter's newer one
    stale = [state(1, 3, "candidate", "candidate", voted_for=1), state(2, 4, "unattached", "voted", voted_for=1)]
    assert i22(stale)["valid"] is False


def test_i22_is_not_applicable_without_a_quorum_and_reads_the_quorums_events_only():
    out = check_invariants({"variant": "kip966"}, [], timed([{"kind": "hwm", "replica": 1, "partition": 0}]))
    assert out["invariants"]["I22"]["valid"] is True and out["invariants"]["I22"]["applicable"] is False


def i18(events):
    return check_invariants(SPEC, [], timed(events))["invariants"]["I18"]


def test_pre_vote_in_the_current_epoch_keeps_i18():
    verdict = i18(election(epoch=3))
    assert verdict["valid"] is True


def test_a_prospective_that_bumped_its_epoch_breaks_i18_q4():
    # a voter cut off alone that raises its epoch while only asking would disrupt a healthy quorum (Q4)
    events = [state(2, 3, "follower", "follower", leader=1), state(2, 4, "prospective", "prospective")]
    verdict = i18(events)
    assert verdict["valid"] is False
    assert "entered pre-vote in epoch 4, not its epoch 3 (Q4)" in verdict["violations"][0]["detail"]
