"""KIP-966 K7: the three unclean recovery strategies (``unclean.recovery.strategy``) on the controller.

- ``balanced`` (default): only when ISR = ELR = ∅; asks every LKELR member, waits for all, elects the
  highest (last epoch, end offset).
- ``proactive``: also when the ELR is non-empty but no member can be elected (all fenced); asks every
  replica, elects the best answer from a live replica once all live replicas answered or the window closed.
- ``manual``: never automatically; the operator's unclean ElectLeaders is the way out.
Every recovery leads alone, RECOVERING, with ELR/LKELR cleared.
"""

from __future__ import annotations

import pytest

from reference_impl.protocol.elr import proactive_recovery_leader

from .controller_helpers import NO_LEADER, cluster, current, state, with_partition
from .test_elr_controller import restart, unfence


def k966(strategy: str, brokers=(1, 2, 3)):
    return cluster(brokers, min_isr=2, elr_enabled=True, unclean_recovery_strategy=strategy)


def all_restarted(ctl, brokers=(1, 2, 3)):
    for b in brokers:
        ctl.apply(ctl.fence_broker(b))
        restart(ctl, b, clean=True)
        unfence(ctl, b)
    return ctl


def elr_all_fenced(strategy: str):
    """Leaderless, ISR ∅, ELR {2, 3} both fenced; broker 1 (not in the ELR) is live."""
    ctl = with_partition(k966(strategy), state([1, 2, 3], [], NO_LEADER, 4, 6, elr=[2, 3]))
    ctl.apply(ctl.fence_broker(2))
    ctl.apply(ctl.fence_broker(3))
    assert current(ctl).elr == [2, 3] and current(ctl).leader == NO_LEADER
    return ctl


def test_strategy_is_validated():
    with pytest.raises(ValueError):
        k966("eager")


def test_balanced_asks_the_lkelr_and_only_when_isr_and_elr_are_empty():
    ctl = all_restarted(with_partition(k966("balanced"), state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3])))
    assert ctl.unclean_recovery_candidates(("t", 0)) == [2, 3]
    res = ctl.unclean_recovery(("t", 0), {2: (3, 12)})
    assert res.records == [] and res.response.name == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    ctl.apply(ctl.unclean_recovery(("t", 0), {2: (3, 12), 3: (3, 0)}))
    assert current(ctl) == state([1, 2, 3], [2], 2, 5, 7, recovery="RECOVERING")
    # With a fenced ELR the balanced strategy does not act (K10: leaderless until an ELR member returns).
    fenced = elr_all_fenced("balanced")
    assert fenced.unclean_recovery_candidates(("t", 0)) == []
    assert fenced.unclean_recovery(("t", 0), {1: (4, 9)}).response.name == "ELECTION_NOT_NEEDED"


def test_proactive_recovers_when_every_elr_member_is_fenced():
    ctl = elr_all_fenced("proactive")
    assert ctl.unclean_recovery_candidates(("t", 0)) == [1]  # the live replicas are asked
    waiting = ctl.unclean_recovery(("t", 0), {})
    assert waiting.records == [] and waiting.response.name == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    res = ctl.unclean_recovery(("t", 0), {1: (4, 9)})  # every live replica answered
    assert res.response.ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1], 1, 5, 7, recovery="RECOVERING")


def test_proactive_takes_the_best_answer_within_the_window():
    ctl = all_restarted(with_partition(k966("proactive"), state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2])))
    assert ctl.unclean_recovery_candidates(("t", 0)) == [1, 2, 3]
    partial = {1: (4, 20), 3: (4, 25)}  # 2 has not answered
    assert ctl.unclean_recovery(("t", 0), partial).records == []
    res = ctl.unclean_recovery(("t", 0), partial, window_closed=True)
    ctl.apply(res)
    assert current(ctl).leader == 3 and current(ctl).isr == [3]


def test_proactive_does_not_act_while_an_elr_member_can_lead():
    ctl = with_partition(k966("proactive"), state([1, 2, 3], [], NO_LEADER, 4, 6, elr=[2, 3]))
    ctl.apply(ctl.fence_broker(2))  # 3 is still live: K3 elects it, no unclean recovery needed
    assert ctl.unclean_recovery_candidates(("t", 0)) == []


def test_manual_never_recovers_by_itself_but_the_operator_can():
    ctl = all_restarted(with_partition(k966("manual"), state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3])))
    assert ctl.unclean_recovery_candidates(("t", 0)) == []
    res = ctl.unclean_recovery(("t", 0), {2: (3, 12), 3: (3, 0)}, window_closed=True)
    assert res.records == [] and res.response.name == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    from reference_impl.protocol.partition_change import Election

    op = ctl.elect_leaders(Election.UNCLEAN, [("t", 0)])
    assert op.response[("t", 0)].ok
    ctl.apply(op)
    assert current(ctl).leader in (1, 2, 3)


def test_proactive_recovery_leader_pure():
    # All asked replicas answered: the best live one; ties in replica order.
    assert proactive_recovery_leader([1, 2, 3], {1: (4, 9), 2: (4, 9), 3: (3, 50)}, [1, 2, 3], False) == 1
    # Missing answers: wait, unless the window is closed.
    assert proactive_recovery_leader([1, 2], {2: (1, 1)}, [1, 2], False) is None
    assert proactive_recovery_leader([1, 2], {2: (1, 1)}, [1, 2], True) == 2
    # Answers from replicas that are no longer live do not count; no answer at all: nobody.
    assert proactive_recovery_leader([1, 2], {2: (9, 9)}, [1], True) is None
    assert proactive_recovery_leader([1, 2], {}, [1, 2], True) is None


def test_queries_group_every_due_partition_by_the_broker_to_ask():
    """``unclean_recovery_queries``: the questions of every partition due for K7, one list per broker."""
    ctl = all_restarted(with_partition(k966("balanced"), state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3])))
    assert ctl.unclean_recovery_queries() == {2: [("t", 0)], 3: [("t", 0)]}
    ctl.apply(ctl.unclean_recovery(("t", 0), {2: (3, 12), 3: (3, 4)}))
    assert ctl.unclean_recovery_queries() == {}  # it has a leader now
    assert elr_all_fenced("balanced").unclean_recovery_queries() == {}
    assert elr_all_fenced("manual").unclean_recovery_queries() == {}
    proactive = elr_all_fenced("proactive")
    assert proactive.unclean_recovery_queries() == {1: [("t", 0)]}  # every live replica
